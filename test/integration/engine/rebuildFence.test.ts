/**
 * The rebuild epoch fence against a real PostgreSQL (no Kafka: applyBatch takes records as values,
 * and the rebuild's database step runs on its own). A member frozen past its session timeout may
 * resume and apply a batch its dead generation fetched after a rebuild emptied the projection; the
 * transaction must refuse it, or the records before it would later count as duplicates.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyBatch, type BatchResult } from "../../../src/engine/applyBatch.js";
import { ReplayableError } from "../../../src/errors.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import type { KafkaRecord } from "../../../src/record.js";
import { readRebuildEpoch } from "../../../src/sql/lockCheckpoint.js";
import { emptyInOneTransaction, type RebuildPlan } from "../../../src/replay/rebuild.js";
import { createTestDatabase, uniqueName, waitFor, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
const log = createLogger("silent");

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** Ledger credits of 1 cent to `account` at `from`..`to` of partition 0. */
function credits(topic: string, account: string, from: number, to: number): KafkaRecord[] {
  const records: KafkaRecord[] = [];
  for (let offset = from; offset <= to; offset++)
    records.push({
      topic,
      partition: 0,
      offset: String(offset),
      timestamp: String(Date.UTC(2026, 0, 1) + offset),
      key: Buffer.from(account),
      value: Buffer.from(JSON.stringify({ account, amount: 1 })),
      headers: {
        ce_specversion: [Buffer.from("1.0")],
        ce_id: [Buffer.from(`${topic}-${offset}`)],
        ce_type: [Buffer.from("ledger.account.credited")],
      },
    });
  return records;
}

async function apply(records: KafkaRecord[], rebuildEpoch: string): Promise<BatchResult> {
  const client = await db.pool.connect();
  try {
    return await applyBatch({
      client,
      projection: ledgerProjection,
      topic: records[0]!.topic,
      partition: 0,
      records,
      highWatermark: "1000",
      maxRecordBytes: 1_048_576,
      rebuildEpoch,
      log,
    });
  } finally {
    client.release();
  }
}

/** The rebuild's database step, as `rebuild --execute` runs it after resetting the group. */
async function rebuildDatabaseStep(groupId: string): Promise<string> {
  const plan: RebuildPlan = {
    projection: ledgerProjection.name,
    groupId,
    topics: [],
    partitions: [],
    missingTopics: [],
    compactedTopics: [],
    tables: [],
    checkpoints: "0",
    eventIds: "0",
    deadLetters: "0",
    groupState: "Empty",
    members: [],
    forced: false,
  };
  const client = await db.pool.connect();
  try {
    const outcome = await emptyInOneTransaction(
      { projection: ledgerProjection, groupId, force: false, log },
      client,
      plan,
    );
    if (outcome.kind !== "executed") throw new Error(`rebuild step: ${outcome.kind}`);
    return outcome.rebuildId;
  } finally {
    client.release();
  }
}

/** What a transaction can change: checkpoints, event ids and the ledger's tables. */
async function state() {
  const { rows } = await db.pool.query<Record<string, string>>(
    `SELECT
       (SELECT json_agg(json_build_array(topic, partition, next_offset) ORDER BY topic, partition)
          FROM replayable.checkpoints WHERE projection = 'ledger')::text AS checkpoints,
       (SELECT count(*) FROM replayable.processed_events WHERE projection = 'ledger')::text AS event_ids,
       (SELECT json_agg(json_build_array(account_id, balance_cents) ORDER BY account_id)
          FROM ledger.ledger_accounts)::text AS accounts,
       (SELECT count(*) FROM ledger.ledger_orders)::text AS orders`,
  );
  return rows[0]!;
}

async function currentEpoch(): Promise<string> {
  const { rows } = await db.pool.query<{ epoch: string }>(
    "SELECT coalesce(max(id), 0)::text AS epoch FROM replayable.rebuilds WHERE projection = 'ledger'",
  );
  return rows[0]!.epoch;
}

describe("the rebuild epoch fence", () => {
  it("refuses a batch carrying the epoch from before a rebuild, changing nothing, and applies it with the new epoch", async () => {
    const topic = uniqueName("t");
    const account = uniqueName("acc");
    const before = await currentEpoch();
    expect((await apply(credits(topic, account, 0, 5), before)).applied).toBe(6);

    const after = await rebuildDatabaseStep(uniqueName("g"));
    expect(BigInt(after)).toBeGreaterThan(BigInt(before));
    expect(await readRebuildEpoch(db.pool, ledgerProjection.name)).toBe(after);
    const emptied = await state();
    expect(emptied.checkpoints).toBeNull();

    // A zombie of the dead generation: its fetch position is past the log start the rebuild reset to.
    const zombie = apply(credits(topic, account, 6, 9), before);
    await expect(zombie).rejects.toBeInstanceOf(ReplayableError);
    await expect(zombie).rejects.toMatchObject({ code: "PROJECTION_REBUILT" });
    expect(await state()).toEqual(emptied);

    // The new generation reads the new epoch and starts again from the log start.
    const replayed = await apply(credits(topic, account, 0, 9), after);
    expect(replayed.applied).toBe(10);
    const rebuilt = await state();
    expect(JSON.parse(rebuilt.checkpoints!)).toEqual([[topic, 0, 10]]);
    expect(JSON.parse(rebuilt.accounts!)).toEqual([[account, 10]]);
  });

  it("refuses the batch when the rebuild committed while the transaction waited for the checkpoint row", async () => {
    const topic = uniqueName("t");
    const account = uniqueName("acc");
    const before = await currentEpoch();
    await apply(credits(topic, account, 0, 2), before);
    // The rebuild holds the checkpoint rows it deleted until COMMIT; the member's lock waits for it.
    const rebuildClient = await db.pool.connect();
    try {
      await rebuildClient.query("BEGIN");
      await rebuildClient.query("DELETE FROM replayable.checkpoints WHERE projection = 'ledger'");
      const zombie = apply(credits(topic, account, 3, 5), before);
      zombie.catch(() => undefined);
      await waitFor(
        "the member's transaction to wait for the checkpoint row lock",
        async () => {
          const { rows } = await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return rows[0]!.n > 0 ? true : undefined;
        },
        10_000,
        20,
      );
      await rebuildClient.query(
        `INSERT INTO replayable.rebuilds (projection, group_id, os_user, host, offsets)
         VALUES ('ledger', 'g', 'test', 'test', '{}')`,
      );
      await rebuildClient.query("TRUNCATE ledger.ledger_accounts, ledger.ledger_orders");
      await rebuildClient.query("DELETE FROM replayable.processed_events WHERE projection = 'ledger'");
      await rebuildClient.query("COMMIT");
      await expect(zombie).rejects.toMatchObject({ code: "PROJECTION_REBUILT" });
    } finally {
      rebuildClient.release();
    }
    const after = await state();
    expect(after.checkpoints).toBeNull();
    expect(after.event_ids).toBe("0");
  });
});
