/**
 * The ledger's set-based batch apply and its per-record apply leave identical derived tables and
 * identical dead letters on the same stream, duplicates and bad records included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KafkaAdmin } from "../../../src/kafka/admin.js";
import { produceRecords, type ProducerRecord } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import {
  ledgerPerRecordProjection,
  ledgerProjection,
} from "../../../src/projections/ledger/ledgerProjection.js";
import { tableChecksums } from "../../../src/sql/tableChecksums.js";
import { metricOf, runUntilCaughtUp } from "../../helpers/inProcess.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  type TestDatabase,
} from "../../helpers/stack.js";

let admin: KafkaAdmin;
const dbs: TestDatabase[] = [];

beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
  for (const db of dbs) await db.drop();
});

const ce = (id: string, type: string, value: unknown): ProducerRecord => ({
  key: "bad",
  value: JSON.stringify(value),
  headers: { ce_specversion: "1.0", ce_id: id, ce_source: "/test", ce_type: type },
});

async function deadLetters(db: TestDatabase): Promise<string[]> {
  const r = await db.pool.query<{ d: string }>(
    `SELECT partition || '@' || "offset" || ' ' || error_code AS d FROM replayable.dead_letters ORDER BY partition, "offset"`,
  );
  return r.rows.map((row) => row.d);
}

describe("ledger batch apply", () => {
  it("gives the same tables and dead letters as per-record apply, with duplicates and bad records", async () => {
    const topic = uniqueName("ledger-batch");
    await admin.createTopic(topic, 3);
    const stream = generateLedgerStream({ count: 1500, duplicateRate: 0.1, seed: 41 });
    const bad: ProducerRecord[] = [
      ce("bad-1", "ledger.account.credited", { account: "acc-1", amount: -5 }),
      // Passes decode, fails in PostgreSQL (text cannot hold NUL, SQLSTATE 22021): the batch falls back.
      ce("bad-2", "ledger.account.credited", { account: "acc-\u0000", amount: 5 }),
      ce("bad-3", "ledger.order.shipped", { order: "ord-x", shipped_at: "soon" }),
    ];
    const records = [...stream.records.slice(0, 700), ...bad, ...stream.records.slice(700)];
    await produceRecords(testKafka(), topic, records);

    const results = [];
    for (const projection of [ledgerProjection, ledgerPerRecordProjection]) {
      const db = await createTestDatabase();
      dbs.push(db);
      const metrics = await runUntilCaughtUp(admin, {
        projection: projection,
        databaseUrl: db.url,
        topic,
        group: uniqueName("g"),
        env: { REPLAYABLE_MAX_BATCH_RECORDS: "200" },
      });
      results.push({
        tables: await tableChecksums(db.pool, ledgerProjection.tables),
        deadLetters: await deadLetters(db),
        applied: await metricOf(metrics, "replayable_records_applied_total"),
        duplicates: await metricOf(metrics, "replayable_duplicates_total"),
      });
    }
    const [batch, perRecord] = results;
    expect(batch!.deadLetters).toHaveLength(3);
    expect(batch!.applied).toBe(stream.events);
    expect(batch!.duplicates).toBe(stream.duplicates);
    expect(batch).toEqual(perRecord);
  });
});
