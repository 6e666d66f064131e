/**
 * docs/design.md "The transaction", step 2: create the checkpoint row if missing, then lock it (the fence between members),
 * reading the projection's rebuild epoch in the same statement (the fence against a member of a
 * generation that ended before a rebuild; docs/design.md "The rebuild epoch").
 */
import type pg from "pg";
import type { OffsetString } from "../offsets.js";
import { partitionKey, type PartitionKey } from "../topicPartition.js";

// Named statements: PostgreSQL parses and plans them once per connection (node-postgres prepares a
// query config with a `name` on first use), which matters for a statement run in every transaction.
// The epoch is an InitPlan of the locking statement, so it costs no round trip; with READ COMMITTED a
// statement that waited for a rebuild's lock on the row finds the row deleted, and the statement
// that locks the re-inserted row takes a snapshot after the rebuild's COMMIT, so it sees the rebuild.
const SELECT_FOR_UPDATE = {
  name: "replayable_lock_checkpoint",
  text: `SELECT next_offset,
       (SELECT coalesce(max(id), 0) FROM replayable.rebuilds WHERE projection = $1) AS rebuild_epoch
     FROM replayable.checkpoints
     WHERE projection = $1 AND topic = $2 AND partition = $3 FOR UPDATE`,
} as const;
const INSERT_MISSING = {
  name: "replayable_insert_checkpoint",
  text: `INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset)
     VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING`,
} as const;
const SELECT_EPOCH = {
  name: "replayable_rebuild_epoch",
  text: `SELECT coalesce(max(id), 0) AS rebuild_epoch FROM replayable.rebuilds WHERE projection = $1`,
} as const;
// One row per checkpoint of the projection, or one row of NULLs when it has none; the epoch in each,
// and whether the latest rebuilds row is the one `migrate --convert-to-versioned` wrote for the
// plain key (CONVERTED_TO below).
const SELECT_EPOCH_AND_CHECKPOINTS = {
  name: "replayable_rebuild_epoch_checkpoints",
  text: `SELECT e.rebuild_epoch, e.converted_to, c.topic, c.partition, c.next_offset
     FROM (SELECT coalesce(max(id), 0) AS rebuild_epoch,
                  (SELECT r.offsets ->> 'convertedTo' FROM replayable.rebuilds r
                    WHERE r.projection = $1 ORDER BY r.id DESC LIMIT 1) AS converted_to
             FROM replayable.rebuilds WHERE projection = $1) e
     LEFT JOIN replayable.checkpoints c ON c.projection = $1`,
} as const;

/**
 * The key of `offsets` in the `replayable.rebuilds` row `migrate --convert-to-versioned` writes for
 * a plain projection's key when it re-keys its dedupe state to version 1's (src/versions/
 * convertToVersioned.ts): that row is a new rebuild epoch of the plain key, which refuses the
 * transactions of every generation begun before it, and marks the key as converted, which stops a
 * plain member reading it at its next generation (docs/design.md "The rebuild epoch").
 */
export const CONVERTED_TO = "convertedTo";

/** A locked checkpoint: offsets and the epoch are decimal strings (bigint). */
export interface LockedCheckpoint {
  /** The next offset to apply ("0" for a new partition). */
  readonly nextOffset: string;
  /** The projection's rebuild epoch as this statement saw it ({@link readRebuildEpoch}). */
  readonly rebuildEpoch: string;
}

/**
 * Locks the checkpoint of (projection, topic, partition) for this transaction and returns the next
 * offset to apply with the projection's rebuild epoch. Call inside BEGIN … COMMIT.
 * One round trip when the row exists (every transaction but a partition's first); otherwise it is
 * inserted (ON CONFLICT DO NOTHING: a concurrent member may insert it first) and locked.
 * @throws Error when the row vanished between the insert and the lock (a rebuild raced the member).
 */
export async function lockCheckpoint(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
): Promise<LockedCheckpoint> {
  type Row = { next_offset: string; rebuild_epoch: string };
  const values = [projection, topic, partition];
  const existing = await client.query<Row>({ ...SELECT_FOR_UPDATE, values });
  const found = existing.rows[0];
  if (found !== undefined) return { nextOffset: found.next_offset, rebuildEpoch: found.rebuild_epoch };
  await client.query({ ...INSERT_MISSING, values });
  const result = await client.query<Row>({ ...SELECT_FOR_UPDATE, values });
  const row = result.rows[0];
  if (row === undefined) throw new Error(`checkpoint row of ${projection} ${topic}/${partition} vanished`);
  return { nextOffset: row.next_offset, rebuildEpoch: row.rebuild_epoch };
}

/**
 * The projection's rebuild epoch: the id of its latest row in replayable.rebuilds (a decimal string),
 * "0" when it was never rebuilt. A rebuild inserts that row in the transaction that empties the
 * projection, and a conversion to versioned in the transaction that moves the plain key's dedupe
 * state to version 1's, so the epoch grows exactly when the key's dedupe state is emptied.
 */
export async function readRebuildEpoch(db: pg.Pool | pg.ClientBase, projection: string): Promise<string> {
  const result = await db.query<{ rebuild_epoch: string }>({ ...SELECT_EPOCH, values: [projection] });
  return result.rows[0]!.rebuild_epoch;
}

/** The projection's rebuild epoch and every checkpoint it has, read by one statement (one snapshot). */
export interface EpochAndCheckpoints {
  /** As {@link readRebuildEpoch} returns it. */
  readonly epoch: string;
  /**
   * The dedupe key (`<name>@v1`) the plain key's state was moved to when the latest rebuilds row is
   * a conversion's ({@link CONVERTED_TO}); undefined otherwise.
   */
  readonly convertedTo?: string;
  /** The next offset to apply per partition that has a checkpoint row (decimal strings). */
  readonly checkpoints: ReadonlyMap<PartitionKey, OffsetString>;
}

/**
 * The projection's rebuild epoch and its checkpoints (and whether its key was converted to a
 * version's), in one statement: what a consumer group
 * generation reads when it begins, on the session holding the projection's shared advisory lock
 * (docs/design.md "The rebuild epoch"; the checkpoints prime the replay fast path, "The replay fast
 * path"). A projection with thousands of partitions reads as many rows, once per generation.
 */
export async function readEpochAndCheckpoints(
  db: pg.Pool | pg.ClientBase,
  projection: string,
): Promise<EpochAndCheckpoints> {
  const result = await db.query<{
    rebuild_epoch: string;
    converted_to: string | null;
    topic: string | null;
    partition: number | null;
    next_offset: string | null;
  }>({ ...SELECT_EPOCH_AND_CHECKPOINTS, values: [projection] });
  const checkpoints = new Map<PartitionKey, OffsetString>();
  for (const row of result.rows) {
    if (row.topic === null || row.partition === null || row.next_offset === null) continue;
    checkpoints.set(partitionKey(row.topic, row.partition), row.next_offset);
  }
  const first = result.rows[0]!;
  return first.converted_to === null
    ? { epoch: first.rebuild_epoch, checkpoints }
    : { epoch: first.rebuild_epoch, checkpoints, convertedTo: first.converted_to };
}
