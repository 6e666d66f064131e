/**
 * Regression (issue 15, event ids at 24 partitions): where re-sent ids were first seen is read
 * through the primary key, one probe per id, even when `replayable.processed_events` has no
 * statistics yet (autovacuum has not analyzed it). With `event_id = ANY($ids)` and many ids the
 * planner, believing the projection has a few dozen rows, read every row of the projection and
 * filtered it, in every transaction that met re-sent ids.
 *
 * Each statement insertEventIds sends is run again under EXPLAIN (ANALYZE) with the same values
 * (an unnamed statement is planned with its values, as a named one is for its first executions),
 * in a transaction that is rolled back, and the rows its scans of processed_events read are counted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { insertEventIds, type EventIdRow } from "../../../src/sql/insertEventIds.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
/** Rows of the projection already recorded: far more than the ids of one batch. */
const RECORDED = 20_000;
/** Ids of the batch, every one of them recorded before (a batch re-sent whole). */
const BATCH = 200;

beforeAll(async () => {
  db = await createTestDatabase();
  // No ANALYZE may arrive during the test: the table keeps no statistics, as a new one has.
  await db.pool.query("ALTER TABLE replayable.processed_events SET (autovacuum_enabled = false)");
});

afterAll(async () => {
  await db?.drop();
});

interface PlanNode {
  readonly "Relation Name"?: string;
  readonly "Node Type": string;
  readonly "Actual Rows"?: number;
  readonly "Actual Loops"?: number;
  readonly "Rows Removed by Filter"?: number;
  readonly "Rows Removed by Index Recheck"?: number;
  readonly Plans?: readonly PlanNode[];
}

/** Rows the scans of processed_events in `node` read: returned plus removed by a filter or recheck. */
function rowsRead(node: PlanNode): number {
  let rows = 0;
  if (node["Relation Name"] === "processed_events" && node["Node Type"] !== "ModifyTable") {
    const loops = node["Actual Loops"] ?? 1;
    rows +=
      ((node["Actual Rows"] ?? 0) +
        (node["Rows Removed by Filter"] ?? 0) +
        (node["Rows Removed by Index Recheck"] ?? 0)) *
      loops;
  }
  for (const child of node.Plans ?? []) rows += rowsRead(child);
  return rows;
}

/** A client that records the statements sent through it. */
function recording(client: pg.PoolClient, sent: { text: string; values: unknown[] }[]): pg.PoolClient {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== "query") return Reflect.get(target, property, receiver) as unknown;
      return (config: { text: string; values?: unknown[] }) => {
        sent.push({ text: config.text, values: config.values ?? [] });
        return target.query(config);
      };
    },
  });
}

describe("insertEventIds on a table without statistics", () => {
  it("reads where re-sent ids were first seen through the primary key, not by scanning the projection", async () => {
    const projection = uniqueName("p");
    await db.pool.query(
      `INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset")
       SELECT $1, 'id-' || g, 't', 0, g FROM generate_series(1, $2::integer) AS g`,
      [projection, RECORDED],
    );
    const batch: EventIdRow[] = Array.from({ length: BATCH }, (_, i) => ({
      eventId: `id-${1 + i * 97}`,
      offset: String(RECORDED + i),
      valueSha256: null,
    }));
    const client = await db.pool.connect();
    const sent: { text: string; values: unknown[] }[] = [];
    try {
      await client.query("BEGIN");
      const result = await insertEventIds(recording(client, sent), projection, "t", 1, batch);
      await client.query("ROLLBACK");
      expect(result.conflicts.size).toBe(BATCH);
      expect(result.seen.size).toBe(BATCH);
      expect(result.seen.get("id-98")).toEqual({ topic: "t", partition: 0, offset: "98", valueSha256: null });

      expect(sent.length).toBeGreaterThan(0);
      for (const statement of sent) {
        await client.query("BEGIN");
        const explained = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
          statement.values,
        );
        await client.query("ROLLBACK");
        const read = rowsRead(explained.rows[0]!["QUERY PLAN"][0].Plan);
        // One index probe per id reads at most the id's row; a scan of the projection reads 20,000.
        expect(read, statement.text).toBeLessThanOrEqual(2 * BATCH);
      }
    } finally {
      client.release();
    }
  });
});
