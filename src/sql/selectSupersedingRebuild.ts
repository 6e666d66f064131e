/**
 * `dead-letters retry`'s guard (docs/design.md "Dead letters and rebuilds"): the rebuild, if any,
 * that emptied the projection after a dead letter was written and handed its record back to the
 * consumer. Such a letter describes a state that no longer exists; its record was (or will be) read
 * again, so retrying it could apply it twice.
 */
import type pg from "pg";

/**
 * The id of the first rebuild of the letter's projection that started after the letter was written
 * (`rebuilds.started_at` > `dead_letters.created_at`, both PostgreSQL's transaction time: the
 * rebuild holds the projection's exclusive advisory lock, so no consumer transaction overlaps it)
 * and reset the letter's partition to an offset at or below the letter's (its audit row's
 * `offsets.partitions[].to`). Undefined when there is none.
 * @param letterId the dead letter's id (decimal string).
 */
export async function selectSupersedingRebuild(
  client: pg.ClientBase,
  letterId: string,
): Promise<string | undefined> {
  const result = await client.query<{ id: string }>(
    `SELECT r.id::text AS id
     FROM replayable.dead_letters AS d
     JOIN replayable.rebuilds AS r ON r.projection = d.projection AND r.started_at > d.created_at
     WHERE d.id = $1::bigint
       AND EXISTS (
         SELECT 1 FROM jsonb_array_elements(r.offsets -> 'partitions') AS p
         WHERE p ->> 'topic' = d.topic AND (p ->> 'partition')::integer = d.partition
           AND (p ->> 'to')::bigint <= d."offset")
     ORDER BY r.id
     LIMIT 1`,
    [letterId],
  );
  return result.rows[0]?.id;
}
