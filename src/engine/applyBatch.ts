/**
 * The dedupe-then-effect transaction for one partition's batch (docs/design.md "The transaction",
 * steps 1–7). Records arrive in offset order; the caller commits the Kafka offset (step 8)
 * only after this returns `committed`.
 */
import type pg from "pg";
import type { Logger } from "pino";
import { ReplayableError, type ErrorCode } from "../errors.js";
import { withTransaction } from "../db/withTransaction.js";
import { failpoint } from "../failpoints.js";
import { compareOffsets, nextOffset, parseOffset } from "../offsets.js";
import type { DuplicateKeyKind, Projection } from "../projection.js";
import type { KafkaRecord } from "../record.js";
import { advanceCheckpoint } from "../sql/advanceCheckpoint.js";
import { insertDeadLetter } from "../sql/insertDeadLetter.js";
import { lockCheckpoint } from "../sql/lockCheckpoint.js";
import { applyRecords } from "./applyRecords.js";
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
  /** Last offset of the batch + 1: the offset to commit to Kafka (docs/design.md step 8). */
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
  /**
   * The projection's rebuild epoch as read when the batch's generation began (readRebuildEpoch,
   * a decimal string): a newer one in the database means the batch was fetched before a rebuild.
   */
  readonly rebuildEpoch: string;
  readonly log: Logger;
}

/**
 * Runs one dedupe-then-effect transaction on `client` (already checked out of the pool).
 * On any error the transaction is rolled back and the error rethrown: a transient one for the
 * caller to retry, `CHECKPOINT_AHEAD_OF_LOG` to stop the consumer, `PROJECTION_REBUILT` to drop the
 * batch's generation.
 * @throws ReplayableError CHECKPOINT_AHEAD_OF_LOG when the checkpoint is above the high watermark.
 * @throws ReplayableError PROJECTION_REBUILT when the projection was rebuilt after `rebuildEpoch`.
 * @throws the underlying database error (classify it with classifyPgError) for anything else.
 */
export async function applyBatch<T>(input: ApplyBatchInput<T>): Promise<BatchResult> {
  const { client, records, log } = input;
  const last = input.throughOffset ?? records[records.length - 1]?.offset;
  if (last === undefined) throw new Error("applyBatch: no records and no throughOffset");
  const lastRecord = records[records.length - 1];
  if (lastRecord !== undefined && compareOffsets(last, lastRecord.offset) < 0)
    throw new RangeError(
      `applyBatch: throughOffset ${last} is below the last record's offset ${lastRecord.offset}`,
    );
  return withTransaction(
    client,
    async () => {
      const result = await inTransaction(input, last);
      await failpoint("before-db-commit");
      return result;
    },
    { lockTimeoutMs: input.lockTimeoutMs, searchPath: input.projection.searchPath, log },
  );
}

async function inTransaction<T>(input: ApplyBatchInput<T>, last: string): Promise<BatchResult> {
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
  const fresh = records.filter((r) => parseOffset(r.offset) >= below);
  const deadLettered: DeadLettered[] = [];
  // Steps 4–5, shared with `dead-letters retry`.
  const result = await applyRecords({
    client,
    projection,
    topic,
    partition,
    records: fresh,
    maxRecordBytes: input.maxRecordBytes,
    log,
    deadLetter: async (record, code, message) => {
      const id = await insertDeadLetter(client, projection.name, record, code, message);
      deadLettered.push({ id, record, code, message });
      log.warn({ offset: record.offset, code, error: message, deadLetterId: id }, "record dead-lettered");
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
