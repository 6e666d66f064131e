/**
 * The dedupe-then-effect transaction for one partition's batch (DESIGN.md "The transaction",
 * steps 1–7). Records arrive in offset order; the caller commits the Kafka offset (step 8)
 * only after this returns `committed`.
 */
import type pg from "pg";
import type { Logger } from "pino";
import { drizzleOf } from "../db/pool.js";
import {
  PermanentRecordError,
  ReplayableError,
  classifyPgError,
  recordErrorMessage,
  type ErrorCode,
} from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { DuplicateKeyKind } from "../metrics/metrics.js";
import { compareOffsets, nextOffset, offsetDistance } from "../offsets.js";
import type { ApplyContext, DecodedRecord, Projection } from "../projection.js";
import { recordBytes, type KafkaRecord } from "../record.js";
import { advanceCheckpoint } from "../sql/advanceCheckpoint.js";
import { insertDeadLetter } from "../sql/insertDeadLetter.js";
import { insertEventIds, type EventIdRow } from "../sql/insertEventIds.js";
import { lockCheckpoint } from "../sql/lockCheckpoint.js";
import { checkpointAheadOfLog } from "./checkpointAheadOfLog.js";
import { extractEventId, valueDigest } from "./dedupeKeys.js";

/** A record that went to dead letters in this transaction. */
export interface DeadLettered {
  readonly record: KafkaRecord;
  readonly code: ErrorCode;
  readonly message: string;
}

/** What one committed transaction did. Counts are of records in the batch. */
export interface BatchResult {
  /** Last offset of the batch + 1: the offset to commit to Kafka (DESIGN.md step 8). */
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
  /** Non-empty, one partition's records in ascending offset order. */
  readonly records: readonly KafkaRecord[];
  /** Partition high watermark when fetched; a checkpoint above it means the log was recreated or truncated. */
  readonly highWatermark?: string;
  /** Records above this size (key + value + headers, bytes) are dead-lettered. */
  readonly maxRecordBytes: number;
  readonly log: Logger;
}

/**
 * Runs one dedupe-then-effect transaction on `client` (already checked out of the pool).
 * On any error the transaction is rolled back and the error rethrown: a transient one for the
 * caller to retry, `CHECKPOINT_AHEAD_OF_LOG` to stop the consumer.
 * @throws ReplayableError CHECKPOINT_AHEAD_OF_LOG when the checkpoint is above the high watermark.
 * @throws the underlying database error (classify it with classifyPgError) for anything else.
 */
export async function applyBatch<T>(input: ApplyBatchInput<T>): Promise<BatchResult> {
  const { client, records, log } = input;
  const last = records[records.length - 1];
  if (last === undefined) throw new Error("applyBatch: empty batch");
  await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
  try {
    const result = await inTransaction(input, last);
    await failpoint("before-db-commit");
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch((rollbackError: unknown) => {
      log.warn({ err: rollbackError }, "ROLLBACK failed; the connection is discarded");
    });
    throw error;
  }
}

async function inTransaction<T>(input: ApplyBatchInput<T>, last: KafkaRecord): Promise<BatchResult> {
  const { client, projection, topic, partition, records, log } = input;
  // Step 2: the checkpoint row lock is the fence between two members holding the partition.
  const checkpoint = await lockCheckpoint(client, projection.name, topic, partition);
  const ahead =
    input.highWatermark === undefined
      ? undefined
      : checkpointAheadOfLog(projection.name, topic, partition, checkpoint, input.highWatermark);
  if (ahead !== undefined) throw ahead;
  const duplicates: Record<DuplicateKeyKind, number> = { offset: 0, event_id: 0 };
  const deadLettered: DeadLettered[] = [];
  const deadLetter = async (record: KafkaRecord, code: ErrorCode, message: string) => {
    await insertDeadLetter(client, projection.name, record, code, message);
    deadLettered.push({ record, code, message });
    log.warn({ offset: record.offset, code, error: message }, "record dead-lettered");
  };

  // Step 3: below the checkpoint means applied (or dead-lettered) already.
  let candidates: KafkaRecord[] = [];
  for (const record of records) {
    if (offsetDistance(record.offset, checkpoint) < 0n) duplicates.offset += 1;
    else if (recordBytes(record) > input.maxRecordBytes) {
      await deadLetter(
        record,
        "RECORD_TOO_LARGE",
        `record is ${recordBytes(record)} bytes, over REPLAYABLE_MAX_RECORD_BYTES=${input.maxRecordBytes}`,
      );
    } else candidates.push(record);
  }

  // Step 4: event ids, one INSERT … ON CONFLICT DO NOTHING RETURNING for the batch.
  const eventIds = new Map<KafkaRecord, string>();
  let eventIdsRecorded = 0;
  if (projection.dedupe.kind === "event-id" && candidates.length > 0) {
    const firstById = new Map<string, { row: EventIdRow; record: KafkaRecord }>();
    const repeats: { record: KafkaRecord; id: string; digest: Buffer | null }[] = [];
    for (const record of candidates) {
      let id: string;
      try {
        id = extractEventId(record, projection.dedupe);
      } catch (error) {
        await deadLetter(record, codeOf(error, "EVENT_ID_MISSING"), recordErrorMessage(error));
        continue;
      }
      const digest = valueDigest(record);
      if (firstById.has(id)) repeats.push({ record, id, digest });
      else firstById.set(id, { row: { eventId: id, offset: record.offset, valueSha256: digest }, record });
    }
    const { inserted, seen } = await insertEventIds(
      client,
      projection.name,
      topic,
      partition,
      [...firstById.values()].map((v) => v.row),
    );
    eventIdsRecorded = inserted.size;
    const fresh = new Set<KafkaRecord>();
    for (const [id, { row, record }] of firstById) {
      if (inserted.has(id)) {
        fresh.add(record);
        eventIds.set(record, id);
        continue;
      }
      const prior = seen.get(id);
      if (prior !== undefined && !sameDigest(prior.valueSha256, row.valueSha256)) {
        await deadLetter(
          record,
          "EVENT_ID_REUSED",
          `event id ${JSON.stringify(id)} was first seen at ${prior.topic}/${prior.partition}@${prior.offset} with a different value`,
        );
      } else duplicates.event_id += 1;
    }
    for (const repeat of repeats) {
      const first = firstById.get(repeat.id);
      if (first !== undefined && !sameDigest(first.row.valueSha256, repeat.digest)) {
        await deadLetter(
          repeat.record,
          "EVENT_ID_REUSED",
          `event id ${JSON.stringify(repeat.id)} was first seen at ${topic}/${partition}@${first.row.offset} with a different value`,
        );
      } else duplicates.event_id += 1;
    }
    candidates = candidates.filter((r) => fresh.has(r));
  }

  // Step 5: decode, then apply in offset order; a permanent failure is rolled back to its savepoint.
  const decoded: DecodedRecord<T>[] = [];
  for (const record of candidates) {
    try {
      decoded.push({ record, value: projection.decode(record), eventId: eventIds.get(record) });
    } catch (error) {
      await deadLetter(record, codeOf(error, "DECODE_FAILED"), recordErrorMessage(error));
    }
  }
  const ctx: ApplyContext = { client, db: drizzleOf(client), log };
  const applied = await applyDecoded(ctx, projection, decoded, deadLetter);

  // Step 6: the checkpoint covers every offset of the batch, duplicates included.
  const next = nextOffset(last.offset);
  await advanceCheckpoint(client, projection.name, topic, partition, next);
  // The Kafka offset to commit is last + 1 even inside a replay: never seek past what the operator asked to re-read.
  return {
    nextOffset: next,
    checkpoint: compareOffsets(next, checkpoint) >= 0 ? next : checkpoint,
    applied,
    duplicates,
    deadLettered,
    eventIdsRecorded,
  };
}

async function applyDecoded<T>(
  ctx: ApplyContext,
  projection: Projection<T>,
  decoded: readonly DecodedRecord<T>[],
  deadLetter: (record: KafkaRecord, code: ErrorCode, message: string) => Promise<void>,
): Promise<number> {
  if (decoded.length === 0) return 0;
  const { client } = ctx;
  if (projection.applyBatch !== undefined) {
    await client.query("SAVEPOINT replayable_batch");
    try {
      await projection.applyBatch(ctx, decoded);
      await failpoint("in-apply");
      await client.query("RELEASE SAVEPOINT replayable_batch");
      return decoded.length;
    } catch (error) {
      if (!isPermanent(error)) throw error;
      // One record is bad: undo the set-based apply and find it one record at a time.
      await client.query("ROLLBACK TO SAVEPOINT replayable_batch");
      await client.query("RELEASE SAVEPOINT replayable_batch");
    }
  }
  let applied = 0;
  for (const item of decoded) {
    await client.query("SAVEPOINT replayable_record");
    try {
      await projection.apply(ctx, item);
      await failpoint("in-apply");
      await client.query("RELEASE SAVEPOINT replayable_record");
      applied += 1;
    } catch (error) {
      if (!isPermanent(error)) throw error;
      await client.query("ROLLBACK TO SAVEPOINT replayable_record");
      await client.query("RELEASE SAVEPOINT replayable_record");
      await deadLetter(item.record, codeOf(error, "APPLY_REJECTED"), recordErrorMessage(error));
    }
  }
  return applied;
}

/** A failure a retry will not fix: the projection said so, or PostgreSQL reported a data or constraint error. */
function isPermanent(error: unknown): boolean {
  return error instanceof PermanentRecordError || classifyPgError(error).kind === "permanent";
}

function codeOf(error: unknown, fallback: ErrorCode): ErrorCode {
  return error instanceof ReplayableError ? error.code : fallback;
}

function sameDigest(a: Buffer | null, b: Buffer | null): boolean {
  if (a === null || b === null) return a === b;
  return a.equals(b);
}
