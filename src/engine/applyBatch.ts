/**
 * The dedupe-then-effect transaction for one partition's batch (docs/design.md "The transaction",
 * steps 1–7). Records arrive in offset order; the caller commits the Kafka offset (step 8)
 * only after this returns `committed`.
 */
import type pg from "pg";
import type { Logger } from "pino";
import { ReplayableError, type ErrorCode } from "../errors.js";
import { withTransaction } from "../db/withTransaction.js";
import { failpoint } from "../support/failpoints.js";
import { compareOffsets, nextOffset, parseOffset } from "../offsets.js";
import type { DuplicateKeyKind, Projection } from "../projection.js";
import type { KafkaRecord } from "../record.js";
import { advanceCheckpoint } from "../sql/advanceCheckpoint.js";
import { insertDeadLetter } from "../sql/insertDeadLetter.js";
import { lockCheckpoint } from "../sql/lockCheckpoint.js";
import { BatchApplyRejected, applyRecords } from "./applyRecords.js";
import { checkpointAheadOfLog } from "./checkpointAheadOfLog.js";

/** A record that went to dead letters in this transaction. */
export interface DeadLettered {
  /** The dead letter's id in replayable.dead_letters (bigint as a decimal string). */
  readonly id: string;
  readonly record: KafkaRecord;
  readonly code: ErrorCode;
  readonly message: string;
}

/** What one committed transaction did. Counts are of records in the batch. */
export interface BatchResult {
  /** Last offset of the batch + 1: the offset to commit to Kafka (docs/design.md "The transaction", step 8). */
  readonly nextOffset: string;
  /** The checkpoint after COMMIT (>= nextOffset during a replay). */
  readonly checkpoint: string;
  readonly applied: number;
  readonly duplicates: Readonly<Record<DuplicateKeyKind, number>>;
  readonly deadLettered: readonly DeadLettered[];
  /** Rows this transaction added to `replayable.processed_events` (0 with the offset key). */
  readonly eventIdsRecorded: number;
}

/** Inputs of {@link applyBatch}. */
export interface ApplyBatchInput<T> {
  readonly client: pg.PoolClient;
  readonly projection: Projection<T>;
  readonly topic: string;
  readonly partition: number;
  /** One partition's records in ascending offset order; empty only with `throughOffset`. */
  readonly records: readonly KafkaRecord[];
  /**
   * The last offset this transaction covers, at or above the last record's: the end of the
   * fetch, where transaction markers (commit/abort control records) and aborted records that
   * `read_committed` filtered out follow the last data record. The checkpoint and the Kafka offset
   * to commit become `throughOffset + 1`, so they reach the high watermark. Default: the last
   * record's offset. Gaps in offsets are normal (docs/design.md "Replay and rebuild").
   */
  readonly throughOffset?: string;
  /** Partition high watermark when fetched; a checkpoint above it means the log was recreated or truncated. */
  readonly highWatermark?: string;
  /**
   * PostgreSQL `lock_timeout` for this transaction, ms; 0 or absent: the server's setting. A lock
   * wait past it fails with 55P03 (lock_not_available), a transient error the caller retries.
   */
  readonly lockTimeoutMs?: number;
  /** Records above this size (key + value + headers, bytes) are dead-lettered. */
  readonly maxRecordBytes: number;
  /** Records with more headers are dead-lettered (REPLAYABLE_MAX_RECORD_HEADERS); default 1000. */
  readonly maxRecordHeaders?: number;
  /**
   * The projection's rebuild epoch as read when the batch's generation began (readRebuildEpoch,
   * a decimal string): a newer one in the database means the batch was fetched before a rebuild.
   */
  readonly rebuildEpoch: string;
  readonly log: Logger;
}

/**
 * Runs one dedupe-then-effect transaction on `client` (already checked out of the pool). The
 * projection's `applyBatch` runs without a savepoint; should it fail permanently (a record it
 * cannot take), the transaction is rolled back and run once more applying the records one at a
 * time, each in its savepoint, so that only the bad record is dead-lettered (docs/design.md "The
 * transaction", step 5). On any other error the transaction is rolled back and the error
 * rethrown: a transient one for the
 * caller to retry, `CHECKPOINT_AHEAD_OF_LOG` to stop the consumer, `PROJECTION_REBUILT` to drop the
 * batch's generation, `RECORDS_NOT_ASCENDING` (thrown before BEGIN) to stop the consumer.
 * @throws ReplayableError RECORDS_NOT_ASCENDING when the records are not in strictly ascending
 *   offset order, or `throughOffset` is below the last one's ({@link notAscending}); nothing is
 *   applied, dead-lettered or checkpointed.
 * @throws ReplayableError CHECKPOINT_AHEAD_OF_LOG when the checkpoint is above the high watermark.
 * @throws ReplayableError PROJECTION_REBUILT when the projection was rebuilt after `rebuildEpoch`.
 * @throws the underlying database error (classify it with classifyPgError) for anything else.
 */
export async function applyBatch<T>(input: ApplyBatchInput<T>): Promise<BatchResult> {
  const { client, records, log } = input;
  const last = input.throughOffset ?? records[records.length - 1]?.offset;
  if (last === undefined) throw new Error("applyBatch: no records and no throughOffset");
  const refused = notAscending(input, last);
  if (refused !== undefined) throw refused;
  const run = (batchApply: "whole-transaction" | "one-at-a-time") =>
    withTransaction(
      client,
      async () => {
        const result = await inTransaction(input, last, batchApply);
        await failpoint("before-db-commit");
        return result;
      },
      { lockTimeoutMs: input.lockTimeoutMs, searchPath: input.projection.searchPath, log },
    );
  let result: BatchResult;
  try {
    // The projection's batch apply without a savepoint: the common case pays no subtransaction.
    result = await run("whole-transaction");
  } catch (error) {
    if (!(error instanceof BatchApplyRejected)) throw error;
    // A record the batch apply cannot take: all of it was rolled back; again, one record at a
    // time, so that only that record is dead-lettered.
    log.debug({ err: error.cause }, "batch apply failed; applying the records one at a time");
    result = await run("one-at-a-time");
  }
  for (const { record, code, message, id } of result.deadLettered)
    log.warn({ offset: record.offset, code, error: message, deadLetterId: id }, "record dead-lettered");
  return result;
}

async function inTransaction<T>(
  input: ApplyBatchInput<T>,
  last: string,
  batchApply: "whole-transaction" | "one-at-a-time",
): Promise<BatchResult> {
  const { client, projection, topic, partition, records, log } = input;
  // Step 2: the checkpoint row lock is the fence between two members holding the partition, and
  // the rebuild epoch the fence against a member of a generation that ended before a rebuild.
  const locked = await lockCheckpoint(client, projection.name, topic, partition);
  if (BigInt(locked.rebuildEpoch) > BigInt(input.rebuildEpoch))
    throw projectionRebuilt(input, locked.rebuildEpoch, records[0]?.offset ?? last);
  const checkpoint = locked.nextOffset;
  const ahead =
    input.highWatermark === undefined
      ? undefined
      : checkpointAheadOfLog(projection.name, topic, partition, checkpoint, input.highWatermark);
  if (ahead !== undefined) throw ahead;
  // Step 3: below the checkpoint means applied (or dead-lettered) already.
  const below = parseOffset(checkpoint, "checkpoint");
  const fresh = atOrAbove(records, below);
  const deadLettered: DeadLettered[] = [];
  // Steps 4–5, shared with `dead-letters retry`.
  const result = await applyRecords({
    client,
    projection,
    topic,
    partition,
    records: fresh,
    maxRecordBytes: input.maxRecordBytes,
    maxRecordHeaders: input.maxRecordHeaders,
    log,
    batchApply,
    // Logged after COMMIT (applyBatch): a transaction run again one record at a time stores them again.
    deadLetter: async (record, code, message) => {
      const id = await insertDeadLetter(client, projection.name, record, code, message);
      deadLettered.push({ id, record, code, message });
    },
  });

  // Step 6: the checkpoint covers every offset of the batch, duplicates, markers and aborted records included.
  const next = nextOffset(last);
  await advanceCheckpoint(client, projection.name, topic, partition, next);
  // The Kafka offset to commit is last + 1 even inside a replay: never seek past what the operator asked to re-read.
  return {
    nextOffset: next,
    checkpoint: compareOffsets(next, checkpoint) >= 0 ? next : checkpoint,
    applied: result.applied,
    duplicates: { ...result.duplicates, offset: records.length - fresh.length },
    deadLettered,
    eventIdsRecorded: result.eventIdsRecorded,
  };
}

/**
 * The records at or above offset `below`: a suffix of `records`, which ascend ({@link notAscending}
 * refused them before BEGIN otherwise), found by parsing offsets only until the first one at or
 * above it; `records` itself (no copy) when it is the first, as outside a replay.
 */
function atOrAbove(records: readonly KafkaRecord[], below: bigint): readonly KafkaRecord[] {
  let first = 0;
  while (first < records.length && parseOffset(records[first]!.offset) < below) first += 1;
  return first === 0 ? records : records.slice(first);
}

/**
 * The refusal of records that are not in strictly ascending offset order, or of a `throughOffset`
 * below the last record's offset; undefined when they ascend.
 *
 * The checkpoint is read once per transaction and filters the records below it (step 3): two
 * copies of one offset in one transaction would both pass it and, with offset dedupe, both be
 * applied; a step back would leave the checkpoint below records already applied. The worker never
 * combines such records (it absorbs only a batch that starts after the transaction's last offset,
 * partitionWorker.ts), and a feed hands them over in offset order (src/feed.ts), so this is a bug
 * in the engine or the feed adapter, never bad data: the transaction is refused before BEGIN,
 * nothing is applied, dead-lettered or checkpointed, and the error cannot be retried (the same
 * records would be refused again), so the retry policy stops the member (`fatal`, exit 1) instead
 * of looping. The offset is not committed: the partition is fetched again from its committed
 * offset after the restart, where the checkpoint counts the records already applied as duplicates.
 */
export function notAscending(
  input: Pick<ApplyBatchInput<unknown>, "topic" | "partition" | "records">,
  throughOffset: string,
): ReplayableError | undefined {
  const { topic, partition, records } = input;
  let previous: bigint | undefined;
  let index = 0;
  for (const record of records) {
    const offset = parseOffset(record.offset, "record offset");
    if (previous !== undefined && offset <= previous)
      return new ReplayableError(
        "RECORDS_NOT_ASCENDING",
        `the records of ${topic}/${partition} are not in ascending offset order: offset ${record.offset} follows ${previous} (record ${index} of ${records.length}); nothing applied`,
        { context: { topic, partition, offset: record.offset, previousOffset: String(previous), index } },
      );
    previous = offset;
    index += 1;
  }
  if (previous !== undefined && parseOffset(throughOffset, "throughOffset") < previous)
    return new ReplayableError(
      "RECORDS_NOT_ASCENDING",
      `the transaction of ${topic}/${partition} ends at offset ${throughOffset}, below its last record's offset ${previous}; nothing applied`,
      { context: { topic, partition, throughOffset, lastOffset: String(previous) } },
    );
  return undefined;
}

/**
 * The refusal of a batch fetched before a rebuild: its generation ended (the member was removed
 * from the group, which the rebuild needed) and its offsets are not where the rebuild reset them.
 */
function projectionRebuilt(
  input: Pick<ApplyBatchInput<unknown>, "projection" | "topic" | "partition" | "rebuildEpoch">,
  rebuildEpoch: string,
  firstOffset: string,
): ReplayableError {
  const { projection, topic, partition } = input;
  return new ReplayableError(
    "PROJECTION_REBUILT",
    `${projection.name} was rebuilt (rebuild ${rebuildEpoch}) after the batch of ${topic}/${partition} from offset ${firstOffset} was fetched (rebuild epoch ${input.rebuildEpoch}): the batch belongs to a group generation that ended; nothing applied`,
    {
      context: {
        projection: projection.name,
        topic,
        partition,
        firstOffset,
        rebuildEpoch,
        fetchedIn: input.rebuildEpoch,
      },
    },
  );
}
