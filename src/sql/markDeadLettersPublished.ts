/** Records that dead letters were also published to the DLQ topic (after the applying COMMIT). */
import type pg from "pg";

/** Sets `published_at = now()` on the dead letters `ids` (decimal strings). */
export async function markDeadLettersPublished(
  client: pg.Pool | pg.ClientBase,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return;
  await client.query(`UPDATE replayable.dead_letters SET published_at = now() WHERE id = ANY($1::bigint[])`, [
    [...ids],
  ]);
}
