/** Reads a projection's checkpoints, for status, replay and the consumer's start-up checks. */
import type pg from "pg";

/** One checkpoint: the next offset to apply for (topic, partition). */
export interface CheckpointRow {
  readonly topic: string;
  readonly partition: number;
  readonly nextOffset: string;
}

/** The checkpoints of `projection`, optionally only of `topic`, ordered by topic and partition. */
export async function readCheckpoints(
  client: pg.Pool | pg.ClientBase,
  projection: string,
  topic?: string,
): Promise<CheckpointRow[]> {
  const result = await client.query<{ topic: string; partition: number; next_offset: string }>(
    `SELECT topic, partition, next_offset FROM replayable.checkpoints
     WHERE projection = $1 AND ($2::text IS NULL OR topic = $2)
     ORDER BY topic, partition`,
    [projection, topic ?? null],
  );
  return result.rows.map((r) => ({ topic: r.topic, partition: r.partition, nextOffset: r.next_offset }));
}
