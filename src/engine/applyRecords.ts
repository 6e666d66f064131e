/**
 * docs/design.md "The transaction", steps 4–5, shared by the consumer's batches ({@link applyBatch})
 * and `dead-letters retry` ({@link retryDeadLetter}): record event ids, check sizes, decode and
 * apply each fresh record in its savepoint, and hand every record that cannot be applied to
 * `deadLetter`. Runs inside a transaction the caller opened.
 */
import type pg from "pg";
import type { Logger } from "pino";
import { drizzleOf } from "../db/pool.js";
import {
  PermanentRecordError,
  ReplayableError,
  classifyPgError,
  recordErrorCode,
  recordErrorMessage,
  type ErrorCode,
} from "../errors.js";
import { failpoint } from "../support/failpoints.js";
import type { ApplyContext, DecodedRecord, DuplicateKeyKind, Projection } from "../projection.js";
import { DEFAULT_MAX_RECORD_HEADERS, headerCount, recordBytes, type KafkaRecord } from "../record.js";
import { scrubSecrets } from "../secrets/secrets.js";
import { insertEventIds, type SeenEventId } from "../sql/insertEventIds.js";
import { extractEventId, valueDigest } from "./dedupeKeys.js";

/** Stores a record that cannot be applied, inside the open transaction. */
export type DeadLetterSink = (record: KafkaRecord, code: ErrorCode, message: string) => Promise<void>;

/** Inputs of {@link applyRecords}. */
export interface ApplyRecordsInput<T> {
  /** A client inside BEGIN; never committed or rolled back here (savepoints only). */
  readonly client: pg.PoolClient;
  readonly projection: Projection<T>;
  readonly topic: string;
  readonly partition: number;
  /** Records of (topic, partition) not yet applied by offset, in ascending offset order. */
  readonly records: readonly KafkaRecord[];
  /** Records above this size (key + value + headers, bytes) are dead-lettered (RECORD_TOO_LARGE). */
  readonly maxRecordBytes: number;
  /**
   * Records with more headers than this (repeated names counted per value) are dead-lettered
   * (RECORD_TOO_MANY_HEADERS, REPLAYABLE_MAX_RECORD_HEADERS). Default {@link DEFAULT_MAX_RECORD_HEADERS}.
   */
  readonly maxRecordHeaders?: number;
  readonly log: Logger;
  readonly deadLetter: DeadLetterSink;
  /**
   * Re-applying a dead letter: an event id already recorded at the record's own topic, partition
   * and offset was recorded when the record was dead-lettered, so it is this record, not a duplicate.
   */
  readonly retrying?: boolean;
  /**
   * How a projection's `applyBatch` runs, and what a permanent failure of it does:
   * - `in-savepoint` (the default): inside a savepoint; on a permanent failure the savepoint is
   *   rolled back and the records are applied one at a time, each in its own savepoint.
   * - `whole-transaction`: without a savepoint (two round trips and a subtransaction fewer per
   *   transaction); a permanent failure throws {@link BatchApplyRejected}, and the caller rolls the
   *   transaction back and runs it again with `one-at-a-time`.
   * - `one-at-a-time`: `applyBatch` is not called; each record is applied in its own savepoint.
   */
  readonly batchApply?: "in-savepoint" | "whole-transaction" | "one-at-a-time";
}

/**
 * A projection's `applyBatch` failed permanently outside a savepoint (`batchApply:
 * "whole-transaction"`): the transaction must be rolled back and run again one record at a time,
 * which finds the record to dead-letter. `cause` is the projection's error.
 */
export class BatchApplyRejected extends Error {
  constructor(cause: unknown) {
    super("the projection's batch apply failed permanently; the records are applied one at a time", {
      cause,
    });
    this.name = "BatchApplyRejected";
  }
}

/** What {@link applyRecords} did with the records. */
export interface ApplyRecordsResult {
  readonly applied: number;
  readonly duplicates: Readonly<Record<DuplicateKeyKind, number>>;
  /** Rows added to `replayable.processed_events` (0 with the offset key). */
  readonly eventIdsRecorded: number;
}

/** Where an event id was recorded and the SHA-256 of that record's value. */
interface RecordedId {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly valueSha256: string | null;
}

/**
 * Applies `records` effectively once: in event-id mode each id is recorded first
 * (`INSERT … ON CONFLICT DO NOTHING RETURNING`, never SELECT-then-INSERT) and a record whose id
 * was recorded before is a duplicate, or EVENT_ID_REUSED when its value differs from the recorded
 * one. An event id stays recorded when its record is dead-lettered, so a re-send of the same event
 * counts as a duplicate while the dead letter holds it.
 * @throws any transient or unclassified database error (the caller rolls the transaction back).
 */
export async function applyRecords<T>(input: ApplyRecordsInput<T>): Promise<ApplyRecordsResult> {
  const { projection, records, log } = input;
  // A dead letter's message is stored, shown and sent in the DLQ header: secrets hidden first (docs/security.md).
  const deadLetter: DeadLetterSink = (record, code, message) =>
    input.deadLetter(record, code, scrubSecrets(message));
  const duplicates: Record<DuplicateKeyKind, number> = { offset: 0, event_id: 0 };
  let candidates: readonly { readonly record: KafkaRecord; readonly eventId?: string }[];
  let eventIdsRecorded = 0;
  if (projection.dedupe.kind === "event-id") {
    const { fresh, inserted } =
      records.length > 0
        ? await recordEventIds(input, projection.dedupe, duplicates)
        : { fresh: [], inserted: 0 };
    candidates = fresh;
    eventIdsRecorded = inserted;
  } else {
    candidates = records.map((record) => ({ record }));
  }

  // Step 5: size, decode, then apply in offset order; a permanent failure is rolled back to its savepoint.
  const decoded: DecodedRecord<T>[] = [];
  for (const { record, eventId } of candidates) {
    const size = recordBytes(record);
    if (size > input.maxRecordBytes) {
      await deadLetter(
        record,
        "RECORD_TOO_LARGE",
        `record is ${size} bytes, over REPLAYABLE_MAX_RECORD_BYTES=${input.maxRecordBytes} (key + value + headers)`,
      );
      continue;
    }
    const headers = headerCount(record);
    const maxHeaders = input.maxRecordHeaders ?? DEFAULT_MAX_RECORD_HEADERS;
    if (headers > maxHeaders) {
      await deadLetter(
        record,
        "RECORD_TOO_MANY_HEADERS",
        `record has ${headers} headers, over REPLAYABLE_MAX_RECORD_HEADERS=${maxHeaders}`,
      );
      continue;
    }
    try {
      decoded.push({ record, value: projection.decode(record), eventId });
    } catch (error) {
      await deadLetter(record, codeOf(error, "DECODE_FAILED"), recordErrorMessage(error));
    }
  }
  const ctx: ApplyContext = { client: input.client, db: drizzleOf(input.client), log };
  const applied = await applyDecoded(
    ctx,
    projection,
    decoded,
    deadLetter,
    input.batchApply ?? "in-savepoint",
  );
  return { applied, duplicates, eventIdsRecorded };
}

/** A record with its event id, in the shape {@link insertEventIds} takes. */
interface IdentifiedRecord {
  readonly record: KafkaRecord;
  readonly eventId: string;
  readonly offset: string;
  readonly valueSha256: string | null;
}

/**
 * Step 4: records each first-seen id; returns the records to apply (in offset order, with their
 * ids) and counts the duplicates.
 */
async function recordEventIds<T>(
  input: ApplyRecordsInput<T>,
  key: Exclude<Projection["dedupe"], { kind: "offset" }>,
  duplicates: Record<DuplicateKeyKind, number>,
): Promise<{ fresh: IdentifiedRecord[]; inserted: number }> {
  const { client, projection, topic, partition, deadLetter } = input;
  const { firsts, firstIndex, repeats } = await identifyRecords(input.records, key, deadLetter);
  const { conflicts, seen } = await insertEventIds(client, projection.name, topic, partition, firsts);
  // Where an id is recorded now: its first record here, unless it was recorded before.
  const recordedAt = (item: IdentifiedRecord): RecordedId =>
    (conflicts.has(item.eventId) ? seen.get(item.eventId) : undefined) ?? {
      topic,
      partition,
      offset: item.offset,
      valueSha256: item.valueSha256,
    };
  const fresh: IdentifiedRecord[] = [];
  for (const item of firsts) {
    if (!conflicts.has(item.eventId)) {
      fresh.push(item);
      continue;
    }
    const prior: SeenEventId | undefined = seen.get(item.eventId);
    if (prior === undefined) {
      duplicates.event_id += 1; // recorded and removed meanwhile (pruned): never apply twice
      continue;
    }
    const { record } = item;
    const itself =
      input.retrying === true &&
      prior.topic === record.topic &&
      prior.partition === record.partition &&
      prior.offset === record.offset;
    if (itself) fresh.push(item);
    else if (prior.valueSha256 !== item.valueSha256) {
      await deadLetter(record, "EVENT_ID_REUSED", reusedMessage(item.eventId, prior));
    } else duplicates.event_id += 1;
  }
  // A repeat is compared with where its id is recorded now, not with its first copy here.
  for (const repeat of repeats) {
    const first = recordedAt(firsts[firstIndex.get(repeat.eventId)!]!);
    if (first.valueSha256 !== repeat.valueSha256) {
      await deadLetter(repeat.record, "EVENT_ID_REUSED", reusedMessage(repeat.eventId, first));
    } else duplicates.event_id += 1;
  }
  return { fresh, inserted: firsts.length - conflicts.size };
}

/**
 * Extracts each record's event id (dead-lettering a record without one) and splits the records
 * into the first of each id, in offset order, and the later repeats of an id.
 */
async function identifyRecords(
  records: readonly KafkaRecord[],
  key: Exclude<Projection["dedupe"], { kind: "offset" }>,
  deadLetter: DeadLetterSink,
): Promise<{ firsts: IdentifiedRecord[]; firstIndex: Map<string, number>; repeats: IdentifiedRecord[] }> {
  const firsts: IdentifiedRecord[] = [];
  const firstIndex = new Map<string, number>();
  const repeats: IdentifiedRecord[] = [];
  for (const record of records) {
    let eventId: string;
    try {
      eventId = extractEventId(record, key);
    } catch (error) {
      await deadLetter(record, codeOf(error, "EVENT_ID_MISSING"), recordErrorMessage(error));
      continue;
    }
    const item = { record, eventId, offset: record.offset, valueSha256: valueDigest(record) };
    if (firstIndex.has(eventId)) repeats.push(item);
    else {
      firstIndex.set(eventId, firsts.length);
      firsts.push(item);
    }
  }
  return { firsts, firstIndex, repeats };
}

function reusedMessage(id: string, first: RecordedId): string {
  return `event id ${JSON.stringify(id)} was first seen at ${first.topic}/${first.partition}@${first.offset} with a different value`;
}

async function applyDecoded<T>(
  ctx: ApplyContext,
  projection: Projection<T>,
  decoded: readonly DecodedRecord<T>[],
  deadLetter: DeadLetterSink,
  batchApply: NonNullable<ApplyRecordsInput<T>["batchApply"]>,
): Promise<number> {
  if (decoded.length === 0) return 0;
  const { client } = ctx;
  if (projection.applyBatch !== undefined && batchApply === "whole-transaction") {
    try {
      await projection.applyBatch(ctx, decoded);
      await failpoint("in-apply");
      return decoded.length;
    } catch (error) {
      if (!isPermanent(error)) throw error;
      throw new BatchApplyRejected(error);
    }
  }
  if (projection.applyBatch !== undefined && batchApply === "in-savepoint") {
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
      await deadLetter(item.record, recordErrorCode(error, "APPLY_REJECTED"), recordErrorMessage(error));
    }
  }
  return applied;
}

/**
 * A failure a retry will not fix: the projection said so, or PostgreSQL reported a data or
 * constraint error or a program limit the record exceeds ({@link classifyPgError}).
 */
function isPermanent(error: unknown): boolean {
  return error instanceof PermanentRecordError || classifyPgError(error).kind === "permanent";
}

function codeOf(error: unknown, fallback: ErrorCode): ErrorCode {
  return error instanceof ReplayableError ? error.code : fallback;
}
