/**
 * Pruning dedupe state (docs/design.md "Pruning dedupe state"): an event-id row may go only when its
 * source offset is below its partition's log start offset, because that record can never be read
 * again. The count and the delete by offset scan the block ranges of the BRIN index
 * processed_events_offset_brin that may hold an offset below the log start offset (drizzle/0002_event_ids_brin:
 * a B-tree here cost every event-id insert more than pruning, a rare command, ever saves).
 */
import type pg from "pg";

/** Event-id rows of one partition. Counts are decimal strings (bigint). */
export interface EventIdPartitionCount {
  readonly topic: string;
  readonly partition: number;
  readonly rows: string;
}

/** Event-id rows of `projection` per (topic, partition) they were first seen in. */
export async function countEventIdsByPartition(
  client: pg.Pool | pg.ClientBase,
  projection: string,
): Promise<EventIdPartitionCount[]> {
  const result = await client.query<{ topic: string; partition: number; rows: string }>(
    `SELECT topic, partition, count(*)::text AS rows FROM replayable.processed_events
     WHERE projection = $1 GROUP BY topic, partition ORDER BY topic, partition`,
    [projection],
  );
  return result.rows;
}

/** Event-id rows of one partition whose source offset is below `logStartOffset`. */
export async function countEventIdsBelow(
  client: pg.Pool | pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
  logStartOffset: string,
): Promise<string> {
  const result = await client.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM replayable.processed_events
     WHERE projection = $1 AND topic = $2 AND partition = $3 AND "offset" < $4::bigint`,
    [projection, topic, partition, logStartOffset],
  );
  return result.rows[0]!.n;
}

/** Deletes the event-id rows of one partition whose source offset is below `logStartOffset`; returns how many. */
export async function deleteEventIdsBelow(
  client: pg.Pool | pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
  logStartOffset: string,
): Promise<string> {
  const result = await client.query(
    `DELETE FROM replayable.processed_events
     WHERE projection = $1 AND topic = $2 AND partition = $3 AND "offset" < $4::bigint`,
    [projection, topic, partition, logStartOffset],
  );
  return String(result.rowCount ?? 0);
}
