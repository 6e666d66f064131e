/** DESIGN.md step 2: create the checkpoint row if missing, then lock it (the fence between members). */
import type pg from "pg";

// Named statements: PostgreSQL parses and plans them once per connection (node-postgres prepares a
// query config with a `name` on first use), which matters for a statement run in every transaction.
const SELECT_FOR_UPDATE = {
  name: "replayable_lock_checkpoint",
  text: `SELECT next_offset FROM replayable.checkpoints
     WHERE projection = $1 AND topic = $2 AND partition = $3 FOR UPDATE`,
} as const;
const INSERT_MISSING = {
  name: "replayable_insert_checkpoint",
  text: `INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset)
     VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING`,
} as const;

/**
 * Locks the checkpoint of (projection, topic, partition) for this transaction and returns
 * the next offset to apply ("0" for a new partition). Call inside BEGIN … COMMIT.
 * One round trip when the row exists (every transaction but a partition's first); otherwise it is
 * inserted (ON CONFLICT DO NOTHING: a concurrent member may insert it first) and locked.
 * @throws Error when the row vanished between the insert and the lock (a rebuild raced the member).
 */
export async function lockCheckpoint(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
): Promise<string> {
  const values = [projection, topic, partition];
  const existing = await client.query<{ next_offset: string }>({ ...SELECT_FOR_UPDATE, values });
  const found = existing.rows[0];
  if (found !== undefined) return found.next_offset;
  await client.query({ ...INSERT_MISSING, values });
  const result = await client.query<{ next_offset: string }>({ ...SELECT_FOR_UPDATE, values });
  const row = result.rows[0];
  if (row === undefined) throw new Error(`checkpoint row of ${projection} ${topic}/${partition} vanished`);
  return row.next_offset;
}
