/**
 * Step 4's INSERT of a batch's event ids against a real PostgreSQL, with two transactions that
 * really interleave: a BEFORE INSERT trigger (installed in this test's own database only) holds
 * each statement before its second row until both transactions are inside their statements.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { insertEventIds, type EventIdRow } from "../../../src/sql/insertEventIds.js";
import { createTestDatabase, uniqueName, waitFor, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
/** The advisory lock key the trigger waits on (shared) while the test holds it (exclusive). */
const BARRIER = 424242;

beforeAll(async () => {
  db = await createTestDatabase();
  // Counts the rows a transaction inserts; before the second one, waits for the barrier.
  await db.pool.query(`
    CREATE FUNCTION public.hold_second_row() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE n integer := coalesce(nullif(current_setting('test.rows', true), ''), '0')::integer + 1;
    BEGIN
      PERFORM set_config('test.rows', n::text, true);
      IF n = 2 THEN PERFORM pg_advisory_xact_lock_shared(${BARRIER}); END IF;
      RETURN NEW;
    END $$`);
  await db.pool.query(`CREATE TRIGGER hold_second_row BEFORE INSERT ON replayable.processed_events
    FOR EACH ROW EXECUTE FUNCTION public.hold_second_row()`);
});

afterAll(async () => {
  await db?.drop();
});

function rows(...ids: string[]): EventIdRow[] {
  return ids.map((eventId, i) => ({ eventId, offset: String(i), valueSha256: null }));
}

async function backendPid(client: pg.PoolClient): Promise<number> {
  return (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
}

describe("insertEventIds", () => {
  it("same event ids from two partitions in opposite orders do not deadlock", async () => {
    const projection = uniqueName("p");
    const [x, y] = [`${projection}-x`, `${projection}-y`];
    const control = await db.pool.connect();
    const a = await db.pool.connect();
    const b = await db.pool.connect();
    try {
      await control.query("SELECT pg_advisory_lock($1)", [BARRIER]);
      const pids = [await backendPid(a), await backendPid(b)];
      await a.query("BEGIN");
      await b.query("BEGIN");
      // Partition 0 holds x then y; partition 1 holds y then x (in offset order).
      const finish = (client: pg.PoolClient, inserting: ReturnType<typeof insertEventIds>) =>
        inserting.then(
          async (result) => {
            await client.query("COMMIT");
            return result;
          },
          async (error: unknown) => {
            await client.query("ROLLBACK");
            throw error;
          },
        );
      const first = finish(a, insertEventIds(a, projection, "t", 0, rows(x, y)));
      await waitFor("transaction A to wait before its second row", async () => {
        const r = await control.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
          [pids[0]],
        );
        return r.rows[0]!.n === 1 ? true : undefined;
      });
      const second = finish(b, insertEventIds(b, projection, "t", 1, rows(y, x)));
      await waitFor("both transactions to wait inside their INSERT", async () => {
        const r = await control.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND wait_event_type = 'Lock'",
          [pids],
        );
        return r.rows[0]!.n === 2 ? true : undefined;
      });
      await control.query("SELECT pg_advisory_unlock($1)", [BARRIER]);

      const settled = await Promise.allSettled([first, second]);
      const errors = settled.flatMap((s) =>
        s.status === "rejected" ? [`${(s.reason as { code?: string }).code}: ${String(s.reason)}`] : [],
      );
      expect(errors).toEqual([]);
      const [ra, rb] = settled.map((s) => (s.status === "fulfilled" ? s.value : undefined));
      // One transaction recorded both ids; the other found both recorded, each where it was first seen.
      const conflicts = [ra!, rb!].map((r) => [...r.conflicts].sort());
      expect(conflicts.sort((p, q) => p.length - q.length)).toEqual([[], [x, y].sort()]);
      const winner = ra!.conflicts.size === 0 ? 0 : 1;
      const loser = winner === 0 ? rb! : ra!;
      expect(loser.seen.get(x)).toMatchObject({
        topic: "t",
        partition: winner,
        offset: winner === 0 ? "0" : "1",
      });
      expect(loser.seen.get(y)).toMatchObject({
        topic: "t",
        partition: winner,
        offset: winner === 0 ? "1" : "0",
      });
      const recorded = await db.pool.query<{ event_id: string; partition: number; offset: string }>(
        `SELECT event_id, partition, "offset" FROM replayable.processed_events WHERE projection = $1 ORDER BY event_id`,
        [projection],
      );
      expect(recorded.rows).toEqual([
        { event_id: x, partition: winner, offset: winner === 0 ? "0" : "1" },
        { event_id: y, partition: winner, offset: winner === 0 ? "1" : "0" },
      ]);
    } finally {
      await control.query("SELECT pg_advisory_unlock_all()");
      control.release();
      a.release();
      b.release();
    }
  });
});
