/**
 * The topics a projection's members consumed (`replayable.projection_topics`), recorded by `run`
 * before it reads a record, so that `prune`, `status` and `rebuild` know a topic of the projection
 * that has no checkpoint and no committed offset yet (docs/replay.md "prune").
 */
import type pg from "pg";

/**
 * Records that `projection` consumes `topics` (each once; a topic recorded before keeps its row).
 * @throws the pg error (e.g. permission denied without INSERT on replayable.projection_topics).
 */
export async function recordProjectionTopics(
  db: pg.Pool | pg.ClientBase,
  projection: string,
  topics: readonly string[],
): Promise<void> {
  if (topics.length === 0) return;
  await db.query(
    `INSERT INTO replayable.projection_topics (projection, topic)
     SELECT $1, t FROM unnest($2::text[]) AS t
     ON CONFLICT DO NOTHING`,
    [projection, [...topics]],
  );
}

/** The topics recorded for `projection`, sorted. */
export async function readProjectionTopics(
  db: pg.Pool | pg.ClientBase,
  projection: string,
): Promise<string[]> {
  const result = await db.query<{ topic: string }>(
    `SELECT topic FROM replayable.projection_topics WHERE projection = $1 ORDER BY topic`,
    [projection],
  );
  return result.rows.map((r) => r.topic);
}
