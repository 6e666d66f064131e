/** Counts a projection's event-id rows, for the `replayable_event_ids` gauge. */
import type pg from "pg";

/**
 * The number of rows in `replayable.processed_events` for `projection`. An index-only scan of
 * the primary key (projection, event_id), so run it now and then, not per batch.
 */
export async function countEventIds(client: pg.Pool | pg.ClientBase, projection: string): Promise<bigint> {
  const result = await client.query<{ n: string }>(
    "SELECT count(*) AS n FROM replayable.processed_events WHERE projection = $1",
    [projection],
  );
  return BigInt(result.rows[0]?.n ?? "0");
}
