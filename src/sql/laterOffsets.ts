/**
 * What lies after a dead letter in its partition, for `dead-letters retry` of a projection whose
 * last write of a key wins (src/engine/retryDeadLetter.ts).
 */
import type pg from "pg";
import type { OffsetString } from "../offsets.js";

/** The partition's checkpoint, and how many offsets between the letter and it may have been applied. */
export interface LaterOffsets {
  /** The next offset to apply. */
  readonly checkpoint: OffsetString;
  /**
   * Offsets after the letter and below the checkpoint that are not dead letters left unapplied
   * (unresolved, discarded, a duplicate): records applied, duplicates skipped, or transaction
   * markers and aborted records, which only the log could tell apart. A letter written before a
   * rebuild that handed its record back is not one, whatever its resolution: the rebuilt run
   * applied the record, skipped it, or dead-lettered it in a new row (which counts). Decimal.
   */
  readonly other: string;
}

/**
 * Reads the checkpoint of the letter's partition and counts the offsets between the letter and it
 * that are not dead letters of `projection` left unapplied (a letter resolved as `applied`, by a
 * retry, counts: its record was applied; letters written before a rebuild that handed their
 * records back are left out, as the rebuilt run read those records again). With `lock` the checkpoint row is locked (`FOR UPDATE`):
 * a member's transaction on the partition, which locks the same row first, runs wholly before the
 * read or after the caller's transaction. Undefined when the partition has no checkpoint (nothing
 * applied, or rebuilt since).
 */
export async function laterOffsets(
  client: pg.Pool | pg.ClientBase,
  projection: string,
  letter: { readonly topic: string; readonly partition: number; readonly offset: OffsetString },
  lock: boolean,
): Promise<LaterOffsets | undefined> {
  const result = await client.query<{ next_offset: string; other: string }>(
    `SELECT c.next_offset,
       (greatest(c.next_offset - $4::bigint - 1, 0) - (
         SELECT count(*) FROM (
           SELECT d."offset" FROM replayable.dead_letters d
           WHERE d.projection = $1 AND d.topic = $2 AND d.partition = $3
             AND d."offset" > $4::bigint AND d."offset" < c.next_offset
             -- A letter written before a rebuild that handed its record back describes an
             -- emptied state, whatever its resolution (superseded, or discarded, duplicate or
             -- applied before the rebuild): the rebuilt run read the record again (as in
             -- selectSupersedingRebuild.ts).
             AND NOT EXISTS (
               SELECT 1 FROM replayable.rebuilds AS r
               WHERE r.projection = d.projection AND r.started_at > d.created_at
                 AND EXISTS (
                   SELECT 1 FROM jsonb_array_elements(r.offsets -> 'partitions') AS p
                   WHERE p ->> 'topic' = d.topic AND (p ->> 'partition')::integer = d.partition
                     AND (p ->> 'to')::bigint <= d."offset"))
           GROUP BY d."offset"
           HAVING bool_and(d.resolution IS DISTINCT FROM 'applied')
         ) unapplied
       ))::text AS other
     FROM replayable.checkpoints c
     WHERE c.projection = $1 AND c.topic = $2 AND c.partition = $3
     ${lock ? "FOR UPDATE OF c" : ""}`,
    [projection, letter.topic, letter.partition, letter.offset],
  );
  const row = result.rows[0];
  return row === undefined ? undefined : { checkpoint: row.next_offset, other: row.other };
}
