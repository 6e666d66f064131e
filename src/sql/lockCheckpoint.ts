/** DESIGN.md step 2: create the checkpoint row if missing, then lock it (the fence between members). */
import type pg from "pg";

/**
 * Locks the checkpoint of (projection, topic, partition) for this transaction and returns
 * the next offset to apply ("0" for a new partition). Call inside BEGIN … COMMIT.
 */
export async function lockCheckpoint(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
): Promise<string> {
  await client.query(
    `INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset)
     VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING`,
    [projection, topic, partition],
  );
  const result = await client.query<{ next_offset: string }>(
    `SELECT next_offset FROM replayable.checkpoints
     WHERE projection = $1 AND topic = $2 AND partition = $3 FOR UPDATE`,
    [projection, topic, partition],
  );
  const row = result.rows[0];
  if (row === undefined) throw new Error(`checkpoint row of ${projection} ${topic}/${partition} vanished`);
  return row.next_offset;
}
