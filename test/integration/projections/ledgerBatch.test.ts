/**
 * The ledger's set-based batch apply and its per-record apply leave identical derived tables and
 * identical dead letters on the same stream, duplicates and bad records included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords, type ProducerRecord } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import {
  ledgerPerRecordProjection,
  ledgerProjection,
} from "../../../src/projections/ledger/ledgerProjection.js";
import { pino } from "pino";
import { drizzleOf } from "../../../src/db/pool.js";
import type { DecodedRecord } from "../../../src/projection.js";
import type { LedgerEvent } from "../../../src/projections/ledger/events.js";
import { tableChecksums } from "../../../src/sql/tableChecksums.js";
import { metricOf, runUntilCaughtUp } from "../../helpers/inProcess.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  type TestDatabase,
} from "../../helpers/stack.js";

let admin: ClusterAdmin;
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

  it("applies orders paid and shipped twice in one batch set-based, as offset order does (no per-record fallback)", async () => {
    // Under offset dedupe a re-sent order event is applied again, often in the same transaction as
    // its original. The set-based apply runs here without the engine's fallback to per-record apply,
    // so an upsert that meets one order twice (SQLSTATE 21000) or a round out of order fails the test.
    let offset = 0;
    const at = (value: LedgerEvent): DecodedRecord<LedgerEvent> => ({
      record: {
        topic: "t",
        partition: 0,
        offset: String(offset),
        timestamp: String(1_700_000_000_000 + offset++),
        key: null,
        value: null,
        headers: {},
      },
      value,
      eventId: undefined,
    });
    const paid = (order: string, amount: number) =>
      at({ type: "ledger.order.paid", order, account: "acc-1", amount });
    const shipped = (order: string) =>
      at({ type: "ledger.order.shipped", order, shippedAt: new Date(1_700_000_000_000) });
    const batch = [
      paid("o1", 10),
      shipped("o2"),
      paid("o2", 20),
      paid("o1", 11),
      shipped("o1"),
      paid("o1", 12),
      shipped("o1"),
      at({ type: "ledger.account.credited", account: "acc-1", amount: 5 }),
      paid("o3", 30),
      shipped("o3"),
      shipped("o3"),
    ];
    const states = [];
    for (const setBased of [true, false]) {
      const db = await createTestDatabase();
      dbs.push(db);
      const client = await db.pool.connect();
      try {
        await client.query("BEGIN");
        const ctx = { client, db: drizzleOf(client), log: pino({ level: "silent" }) };
        if (setBased) await ledgerProjection.applyBatch!(ctx, batch);
        else for (const item of batch) await ledgerProjection.apply(ctx, item);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      const orders = await db.pool.query(
        `SELECT order_id, amount_cents, state, paid_at, shipped_at FROM ledger.ledger_orders ORDER BY order_id`,
      );
      states.push({ orders: orders.rows, tables: await tableChecksums(db.pool, ledgerProjection.tables) });
    }
    const [setBased, perRecord] = states;
    expect(
      setBased!.orders.map((o: { order_id: string; state: string }) => `${o.order_id}:${o.state}`),
    ).toEqual(["o1:shipped", "o2:paid", "o3:shipped"]);
    expect(setBased).toEqual(perRecord);
  });
});
