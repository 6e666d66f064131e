/** The checkpoint of one partition, locked for the transaction, without creating it. */
import type pg from "pg";
import type { OffsetString } from "../offsets.js";

/**
 * Locks the checkpoint row of (`projection`, `topic`, `partition`) (`FOR UPDATE`: a member's
 * transaction on the partition, which locks the same row first, runs wholly before or after the
 * caller's) and returns its next offset to apply; undefined when the partition has none (nothing
 * applied, or rebuilt since).
 */
export async function lockPartitionCheckpoint(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
): Promise<OffsetString | undefined> {
  const result = await client.query<{ next_offset: string }>(
    `SELECT next_offset FROM replayable.checkpoints
     WHERE projection = $1 AND topic = $2 AND partition = $3 FOR UPDATE`,
    [projection, topic, partition],
  );
  return result.rows[0]?.next_offset;
}
