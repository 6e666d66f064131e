/** docs/design.md "The transaction", step 6: move the checkpoint forward (never back) inside the applying transaction. */
import type pg from "pg";

/** Sets the checkpoint of (projection, topic, partition) to `nextOffset` if that is ahead of it. */
export async function advanceCheckpoint(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
  nextOffset: string,
): Promise<void> {
  await client.query({
    // A named statement: parsed and planned once per connection, it runs in every transaction.
    name: "replayable_advance_checkpoint",
    text: `UPDATE replayable.checkpoints SET next_offset = $4::bigint, updated_at = now()
     WHERE projection = $1 AND topic = $2 AND partition = $3 AND next_offset < $4::bigint`,
    values: [projection, topic, partition, nextOffset],
  });
}
