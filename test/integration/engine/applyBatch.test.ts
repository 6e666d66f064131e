/**
 * The dedupe-then-effect transaction against a real PostgreSQL, one batch at a time (no Kafka:
 * applyBatch takes records as values). Regression tests are named after the case they reproduce.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyBatch, type BatchResult } from "../../../src/engine/applyBatch.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import type { KafkaRecord } from "../../../src/record.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
const log = createLogger("silent");

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** A ledger credit record at `offset` of partition 0. */
function credit(
  topic: string,
  offset: number,
  ceId: string,
  amount: number,
  extra: Partial<KafkaRecord> = {},
): KafkaRecord {
  return {
    topic,
    partition: 0,
    offset: String(offset),
    timestamp: String(Date.UTC(2026, 0, 1) + offset),
    key: Buffer.from("acc-1"),
    value: Buffer.from(JSON.stringify({ account: "acc-1", amount })),
    headers: {
      ce_specversion: [Buffer.from("1.0")],
      ce_id: [Buffer.from(ceId)],
      ce_type: [Buffer.from("ledger.account.credited")],
    },
    ...extra,
  };
}

async function apply(records: KafkaRecord[], maxRecordBytes = 1_048_576): Promise<BatchResult> {
  const client = await db.pool.connect();
  try {
    return await applyBatch({
      client,
      projection: ledgerProjection,
      topic: records[0]!.topic,
      partition: 0,
      records,
      maxRecordBytes,
      rebuildEpoch: "0",
      log,
    });
  } finally {
    client.release();
  }
}

/** {@link apply}, returning the text of every statement the transaction sent besides the result. */
async function applyTraced(records: KafkaRecord[]): Promise<{ result: BatchResult; statements: string[] }> {
  const client = await db.pool.connect();
  const statements: string[] = [];
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const first = args[0];
    statements.push(typeof first === "string" ? first : String((first as { text?: string }).text));
    return query(...args);
  };
  try {
    const result = await applyBatch({
      client,
      projection: ledgerProjection,
      topic: records[0]!.topic,
      partition: 0,
      records,
      maxRecordBytes: 1_048_576,
      rebuildEpoch: "0",
      log,
    });
    return { result, statements };
  } finally {
    (client as unknown as { query: unknown }).query = query;
    client.release();
  }
}

async function balance(account: string): Promise<string | undefined> {
  const r = await db.pool.query<{ balance_cents: string }>(
    "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = $1",
    [account],
  );
  return r.rows[0]?.balance_cents;
}

async function deadLetters(topic: string) {
  const r = await db.pool.query<{ offset: string; error_code: string; error_message: string }>(
    `SELECT "offset", error_code, error_message FROM replayable.dead_letters WHERE topic = $1 ORDER BY "offset"`,
    [topic],
  );
  return r.rows;
}

describe("applyBatch", () => {
  it("counts the records below the checkpoint as offset duplicates and applies the rest: a batch wholly below, one straddling it", async () => {
    const topic = uniqueName("t");
    const batch = (offsets: number[]) => offsets.map((o) => credit(topic, o, `${topic}-${o}`, 1));
    const first = await apply(batch([0, 1, 2]));
    expect(first).toMatchObject({ applied: 3, nextOffset: "3", checkpoint: "3" });
    const below = await apply(batch([0, 1, 2]));
    expect(below.applied).toBe(0);
    expect(below.duplicates.offset).toBe(3);
    const straddling = await apply(batch([1, 2, 3, 4]));
    expect(straddling.applied).toBe(2);
    expect(straddling.duplicates.offset).toBe(2);
    expect(straddling.checkpoint).toBe("5");
    const ids = await db.pool.query<{ event_id: string }>(
      "SELECT event_id FROM replayable.processed_events WHERE topic = $1 ORDER BY event_id",
      [topic],
    );
    expect(ids.rows.map((r) => r.event_id)).toEqual([0, 1, 2, 3, 4].map((o) => `${topic}-${o}`));
  });

  it("regression: an order paid at a timestamp JavaScript's Date cannot hold (before 271821 BC; Kafka accepts any past CreateTime) is dead-lettered, and the partition goes on", async () => {
    const topic = uniqueName("t");
    const paid: KafkaRecord = {
      ...credit(topic, 1, `${topic}-p`, 0),
      timestamp: "-8700000000000000",
      value: Buffer.from(JSON.stringify({ order: `${topic}-o`, account: "acc-1", amount: 5 })),
      headers: {
        ce_specversion: [Buffer.from("1.0")],
        ce_id: [Buffer.from(`${topic}-p`)],
        ce_type: [Buffer.from("ledger.order.paid")],
      },
    };
    const result = await apply([credit(topic, 0, `${topic}-a`, 10), paid, credit(topic, 2, `${topic}-c`, 7)]);
    expect(result.applied).toBe(2);
    expect(result.nextOffset).toBe("3");
    expect((await deadLetters(topic)).map((d) => [d.offset, d.error_code])).toEqual([
      ["1", "APPLY_REJECTED"],
    ]);
  });

  it("applies a batch with a bad record in the middle once and dead-letters the bad one", async () => {
    const topic = uniqueName("t");
    const bad: KafkaRecord = { ...credit(topic, 1, `${topic}-b`, 5), value: Buffer.from("{") };
    const result = await apply([credit(topic, 0, `${topic}-a`, 10), bad, credit(topic, 2, `${topic}-c`, 7)]);
    expect(result.applied).toBe(2);
    expect(result.nextOffset).toBe("3");
    expect((await deadLetters(topic)).map((d) => [d.offset, d.error_code])).toEqual([["1", "DECODE_FAILED"]]);
  });

  it("regression: a redelivery in the same batch as a reused id is a duplicate, not EVENT_ID_REUSED", async () => {
    const topic = uniqueName("t");
    const id = `${topic}-x`;
    await apply([credit(topic, 0, id, 100)]);
    // offset 1 reuses the id with another payload; offset 2 is a plain redelivery of offset 0.
    const result = await apply([credit(topic, 1, id, 999), credit(topic, 2, id, 100)]);
    expect(result.duplicates.event_id).toBe(1);
    const letters = await deadLetters(topic);
    expect(letters.map((d) => [d.offset, d.error_code])).toEqual([["1", "EVENT_ID_REUSED"]]);
    expect(letters[0]!.error_message).toContain(`${topic}/0@0`);
  });

  it("records each id with the SHA-256 of its value (NULL for a null value) and compares re-sends with it", async () => {
    const topic = uniqueName("t");
    const tombstone: KafkaRecord = { ...credit(topic, 1, `${topic}-null`, 1), value: null };
    // Three ids in one statement: the digests are packed into one parameter, so each must land on its own row.
    await apply([credit(topic, 0, `${topic}-a`, 10), tombstone, credit(topic, 2, `${topic}-c`, 7)]);
    const rows = await db.pool.query<{ event_id: string; sha: string | null }>(
      `SELECT event_id, encode(value_sha256, 'hex') AS sha FROM replayable.processed_events
       WHERE topic = $1 ORDER BY "offset"`,
      [topic],
    );
    expect(rows.rows).toEqual([
      {
        event_id: `${topic}-a`,
        sha: createHash("sha256")
          .update(credit(topic, 0, "", 10).value!)
          .digest("hex"),
      },
      { event_id: `${topic}-null`, sha: null },
      {
        event_id: `${topic}-c`,
        sha: createHash("sha256")
          .update(credit(topic, 2, "", 7).value!)
          .digest("hex"),
      },
    ]);
    // A re-sent null value is a duplicate; a value under the id of the null one is a reused id.
    const again = await apply([
      { ...tombstone, offset: "3" },
      { ...credit(topic, 4, `${topic}-null`, 5) },
      credit(topic, 5, `${topic}-c`, 7),
    ]);
    expect(again.duplicates.event_id).toBe(2);
    expect(again.applied).toBe(0);
    const letters = await deadLetters(topic);
    expect(letters.map((d) => [d.offset, d.error_code])).toEqual([
      ["1", "DECODE_FAILED"],
      ["4", "EVENT_ID_REUSED"],
    ]);
  });

  it("regression: a reused id repeated in one batch names where the id was first seen", async () => {
    const topic = uniqueName("t");
    const id = `${topic}-y`;
    await apply([credit(topic, 0, id, 100)]);
    const result = await apply([credit(topic, 1, id, 100), credit(topic, 2, id, 555)]);
    expect(result.duplicates.event_id).toBe(1);
    const letters = await deadLetters(topic);
    expect(letters.map((d) => [d.offset, d.error_code])).toEqual([["2", "EVENT_ID_REUSED"]]);
    expect(letters[0]!.error_message).toContain(`${topic}/0@0`);
  });

  it("regression: a value whose JSON error message echoes a NUL byte is dead-lettered, not retried forever", async () => {
    const topic = uniqueName("t");
    const nul: KafkaRecord = { ...credit(topic, 0, `${topic}-n`, 1), value: Buffer.from([0x00]) };
    const result = await apply([nul, credit(topic, 1, `${topic}-ok`, 3)]);
    expect(result.applied).toBe(1);
    const letters = await deadLetters(topic);
    expect(letters.map((d) => d.error_code)).toEqual(["DECODE_FAILED"]);
    expect(letters[0]!.error_message).not.toContain("\u0000");
  });

  it("regression: a ce_id with a NUL character is dead-lettered as EVENT_ID_MISSING, not retried forever", async () => {
    const topic = uniqueName("t");
    const result = await apply([credit(topic, 0, "a\u0000b", 1), credit(topic, 1, `${topic}-ok`, 3)]);
    expect(result.applied).toBe(1);
    expect((await deadLetters(topic)).map((d) => d.error_code)).toEqual(["EVENT_ID_MISSING"]);
  });

  it("an account with a NUL character passes decode, fails in apply (22021) and is rolled back to its savepoint", async () => {
    const topic = uniqueName("t");
    const account = `${topic}-acc`;
    const bad: KafkaRecord = {
      ...credit(topic, 1, `${topic}-bad`, 5),
      value: Buffer.from(JSON.stringify({ account: "nul\u0000acc", amount: 5 })),
    };
    const good = (offset: number, amount: number): KafkaRecord => ({
      ...credit(topic, offset, `${topic}-${offset}`, amount),
      value: Buffer.from(JSON.stringify({ account, amount })),
    });
    const result = await apply([good(0, 10), bad, good(2, 20)]);
    expect(result.applied).toBe(2);
    expect(await balance(account)).toBe("30");
    expect((await deadLetters(topic)).map((d) => [d.offset, d.error_code])).toEqual([
      ["1", "APPLY_REJECTED"],
    ]);
  });

  it("a batch the projection applies whole runs in no savepoint (no subtransaction per transaction)", async () => {
    const topic = uniqueName("t");
    const { result, statements } = await applyTraced([
      credit(topic, 0, `${topic}-a`, 10),
      credit(topic, 1, `${topic}-b`, 5),
    ]);
    expect(result.applied).toBe(2);
    expect(statements.some((s) => /SAVEPOINT/i.test(s))).toBe(false);
    expect(statements.filter((s) => /^BEGIN/.test(s))).toHaveLength(1);
  });

  it("a batch apply refused on one record runs the transaction again one record at a time: each dead letter stored once", async () => {
    const topic = uniqueName("t");
    const account = `${topic}-acc`;
    const good = (offset: number, amount: number): KafkaRecord => ({
      ...credit(topic, offset, `${topic}-${offset}`, amount),
      value: Buffer.from(JSON.stringify({ account, amount })),
    });
    const undecodable: KafkaRecord = { ...credit(topic, 1, `${topic}-1`, 1), value: Buffer.from("{") };
    const refused: KafkaRecord = {
      ...credit(topic, 3, `${topic}-3`, 5),
      value: Buffer.from(JSON.stringify({ account: "nul\u0000acc", amount: 5 })),
    };
    const { result, statements } = await applyTraced([
      good(0, 10),
      undecodable,
      good(2, 20),
      refused,
      good(4, 40),
    ]);
    expect(result.applied).toBe(3);
    expect(result.deadLettered.map((d) => [d.record.offset, d.code])).toEqual([
      ["1", "DECODE_FAILED"],
      ["3", "APPLY_REJECTED"],
    ]);
    expect(await balance(account)).toBe("70");
    expect((await deadLetters(topic)).map((d) => [d.offset, d.error_code])).toEqual([
      ["1", "DECODE_FAILED"],
      ["3", "APPLY_REJECTED"],
    ]);
    // The first transaction rolled back, the second committed.
    expect(statements.filter((s) => /^BEGIN/.test(s))).toHaveLength(2);
    expect(statements.filter((s) => s === "ROLLBACK")).toHaveLength(1);
    expect(statements.filter((s) => s === "COMMIT")).toHaveLength(1);
  });

  it("a record over the size limit is dead-lettered once; a re-send with the same ce_id counts as a duplicate", async () => {
    const topic = uniqueName("t");
    const id = `${topic}-big`;
    const big = (offset: number) => ({
      ...credit(topic, offset, id, 1),
      value: Buffer.from(JSON.stringify({ account: "acc-1", amount: 1, pad: "x".repeat(2000) })),
    });
    const first = await apply([big(0)], 1000);
    expect(first.deadLettered.map((d) => d.code)).toEqual(["RECORD_TOO_LARGE"]);
    const second = await apply([big(1)], 1000);
    expect(second.deadLettered).toEqual([]);
    expect(second.duplicates.event_id).toBe(1);
  });

  describe("regression: records that do not ascend in offset are refused, not applied twice (issue 25, item 2)", () => {
    /** The ledger with offset dedupe: only the checkpoint keeps a record from being applied twice. */
    const byOffset = { ...ledgerProjection, dedupe: { kind: "offset" } } as const;

    async function applyByOffset(topic: string, offsets: number[]): Promise<BatchResult> {
      const records = offsets.map((offset) => ({
        ...credit(topic, offset, `${topic}-${offset}`, 10 ** offset),
        value: Buffer.from(JSON.stringify({ account: `${topic}-acc`, amount: 10 ** offset })),
      }));
      const client = await db.pool.connect();
      try {
        return await applyBatch({
          client,
          projection: byOffset,
          topic,
          partition: 0,
          records,
          maxRecordBytes: 1_048_576,
          rebuildEpoch: "0",
          log,
        });
      } finally {
        client.release();
      }
    }

    async function checkpoint(topic: string): Promise<string | undefined> {
      const r = await db.pool.query<{ next_offset: string }>(
        "SELECT next_offset FROM replayable.checkpoints WHERE projection = $1 AND topic = $2 AND partition = 0",
        [byOffset.name, topic],
      );
      return r.rows[0]?.next_offset;
    }

    it.each([
      ["an overlap (a leader change fetched offsets 1..2 twice)", [0, 1, 2, 1, 2, 3]],
      ["a repeated offset", [0, 1, 1, 2]],
      ["a step back (an out-of-range reset to the log start)", [2, 3, 0, 1]],
    ])("%s: nothing applied, dead-lettered or checkpointed", async (_case, offsets) => {
      const topic = uniqueName("t");
      await expect(applyByOffset(topic, offsets)).rejects.toMatchObject({
        code: "RECORDS_NOT_ASCENDING",
        canRetry: false,
      });
      expect(await balance(`${topic}-acc`)).toBeUndefined();
      expect(await checkpoint(topic)).toBeUndefined();
      expect(await deadLetters(topic)).toEqual([]);
      // The same records once each, ascending, apply once.
      const result = await applyByOffset(
        topic,
        [...new Set(offsets)].sort((a, b) => a - b),
      );
      expect(result.applied).toBe(new Set(offsets).size);
      expect(await balance(`${topic}-acc`)).toBe(
        String([...new Set(offsets)].reduce((s, o) => s + 10 ** o, 0)),
      );
    });
  });
});
