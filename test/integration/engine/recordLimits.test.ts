/**
 * Records over a limit are dead-lettered with a code naming the limit, and the rest of the batch is
 * applied (issue 26, items 2 and 3): a key PostgreSQL cannot index (SQLSTATE 54000, "index row size
 * exceeds maximum") in the upsert sink, and a record with more headers than
 * REPLAYABLE_MAX_RECORD_HEADERS. Real PostgreSQL, applyBatch with records as values (no Kafka).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyBatch, type BatchResult } from "../../../src/engine/applyBatch.js";
import { retryDeadLetter } from "../../../src/engine/retryDeadLetter.js";
import { classifyPgError } from "../../../src/errors.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { upsertProjection } from "../../../src/projections/upsert/upsertProjection.js";
import { parseUpsertProjectionSpec } from "../../../src/projections/upsert/upsertProjectionSpec.js";
import type { KafkaRecord } from "../../../src/record.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
const log = createLogger("silent");

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(`CREATE SCHEMA sink; CREATE TABLE sink.items (id text PRIMARY KEY, name text)`);
});

afterAll(async () => {
  await db?.drop();
});

const items = upsertProjection(
  parseUpsertProjectionSpec({
    kind: "upsert",
    name: "items",
    topics: ["unused"],
    table: "sink.items",
    mode: "upsert",
    key: { from: "record-key", column: "id", type: "text" },
    columns: { name: { type: "text" } },
  }),
) as Projection<unknown>;

function record(topic: string, offset: number, fields: Partial<KafkaRecord>): KafkaRecord {
  return {
    topic,
    partition: 0,
    offset: String(offset),
    timestamp: "1767225600000",
    key: null,
    value: null,
    headers: Object.create(null) as KafkaRecord["headers"],
    ...fields,
  };
}

async function apply(
  projection: Projection<unknown>,
  records: KafkaRecord[],
  extra: { maxRecordHeaders?: number } = {},
): Promise<BatchResult> {
  const client = await db.pool.connect();
  try {
    return await applyBatch({
      client,
      projection,
      topic: records[0]!.topic,
      partition: 0,
      records,
      maxRecordBytes: 1_048_576,
      rebuildEpoch: "0",
      log,
      ...extra,
    });
  } finally {
    client.release();
  }
}

describe("records over a limit", () => {
  it("regression: a key too long for the primary key's index is dead-lettered (54000), not retried for ever", async () => {
    const topic = uniqueName("t");
    // Random base64 does not compress: the index row is far above btree's 2704-byte maximum.
    const longKey = randomBytes(6000).toString("base64");
    const value = Buffer.from(JSON.stringify({ name: "n" }));
    const records = [
      record(topic, 0, { key: Buffer.from("a"), value }),
      record(topic, 1, { key: Buffer.from(longKey), value }),
      record(topic, 2, { key: Buffer.from("b"), value }),
    ];
    for (const projection of [items, { ...items, applyBatch: undefined }]) {
      await db.pool.query("TRUNCATE sink.items");
      const result = await apply(
        projection,
        records.map((r) => ({ ...r, topic: `${topic}-${projection.applyBatch ? "b" : "r"}` })),
      );
      expect(result.applied).toBe(2);
      expect(result.deadLettered.map((d) => [d.record.offset, d.code])).toEqual([
        ["1", "DATABASE_LIMIT_EXCEEDED"],
      ]);
      expect(result.deadLettered[0]!.message).toMatch(/index row.*SQLSTATE 54000/);
      const rows = await db.pool.query<{ id: string }>("SELECT id FROM sink.items ORDER BY id");
      expect(rows.rows).toEqual([{ id: "a" }, { id: "b" }]);
    }
  });

  it("regression: a record with more headers than REPLAYABLE_MAX_RECORD_HEADERS is dead-lettered with its headers", async () => {
    const topic = uniqueName("t");
    const credit = (offset: number, extraHeaders: number): KafkaRecord => {
      const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
      headers.ce_specversion = [Buffer.from("1.0")];
      headers.ce_id = [Buffer.from(`${topic}-${offset}`)];
      headers.ce_type = [Buffer.from("ledger.account.credited")];
      for (let i = 0; i < extraHeaders; i++) headers[`x${i}`] = [null];
      return record(topic, offset, {
        key: Buffer.from("acc-l"),
        value: Buffer.from(JSON.stringify({ account: "acc-l", amount: 1 })),
        headers,
      });
    };
    // 3 + 7 = 10 headers is at the limit, 3 + 8 over it.
    const result = await apply(ledgerProjection, [credit(0, 7), credit(1, 8)], {
      maxRecordHeaders: 10,
    });
    expect(result.applied).toBe(1);
    expect(result.deadLettered.map((d) => [d.record.offset, d.code])).toEqual([
      ["1", "RECORD_TOO_MANY_HEADERS"],
    ]);
    expect(result.deadLettered[0]!.message).toContain("REPLAYABLE_MAX_RECORD_HEADERS=10");
    const stored = await db.pool.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM jsonb_object_keys(headers))::int AS n FROM replayable.dead_letters WHERE topic = $1`,
      [topic],
    );
    expect(stored.rows).toEqual([{ n: 11 }]);

    // `dead-letters retry` with the limit raised applies it, null-valued headers and all.
    const client = await db.pool.connect();
    try {
      const outcome = await retryDeadLetter({
        client,
        projection: ledgerProjection,
        id: result.deadLettered[0]!.id,
        maxRecordBytes: 1_048_576,
        maxRecordHeaders: 11,
        resolvedBy: "test@host",
        log,
      });
      expect(outcome).toEqual({ kind: "applied" });
    } finally {
      client.release();
    }
    const balance = await db.pool.query<{ balance_cents: string }>(
      "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = 'acc-l'",
    );
    expect(balance.rows).toEqual([{ balance_cents: "2" }]);
  });

  it("classifies program_limit_exceeded by what a retry can do: data-sized limits are the record's, statement shape a fault", () => {
    expect(classifyPgError({ code: "54000" }).kind).toBe("permanent");
    expect(classifyPgError({ code: "54001" }).kind).toBe("permanent");
    expect(classifyPgError({ code: "54011" }).kind).toBe("fault");
    expect(classifyPgError({ code: "54023" }).kind).toBe("fault");
  });
});
