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
   * markers and aborted records, which only the log could tell apart. A letter resolved as
   * `superseded` is not one: the rebuild handed its record back, and the rebuilt run applied it,
   * skipped it, or dead-lettered it in a new row (which counts). Decimal.
   */
  readonly other: string;
}

/**
 * Reads the checkpoint of the letter's partition and counts the offsets between the letter and it
 * that are not dead letters of `projection` left unapplied (a letter resolved as `applied`, by a
 * retry, counts: its record was applied; so does one resolved as `superseded` alone, whose record
 * the rebuilt run read again). With `lock` the checkpoint row is locked (`FOR UPDATE`):
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
           GROUP BY d."offset"
           HAVING bool_and(d.resolution IS DISTINCT FROM 'applied')
             AND bool_or(d.resolution IS DISTINCT FROM 'superseded')
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
