/**
 * DESIGN.md "The transaction", steps 4–5, shared by the consumer's batches ({@link applyBatch})
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
  recordErrorMessage,
  type ErrorCode,
} from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { DuplicateKeyKind } from "../metrics/metrics.js";
import type { ApplyContext, DecodedRecord, Projection } from "../projection.js";
import { recordBytes, type KafkaRecord } from "../record.js";
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
  readonly log: Logger;
  readonly deadLetter: DeadLetterSink;
  /**
   * Re-applying a dead letter: an event id already recorded at the record's own topic, partition
   * and offset was recorded when the record was dead-lettered, so it is this record, not a duplicate.
   */
  readonly retrying?: boolean;
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
  const { projection, records, log, deadLetter } = input;
  const duplicates: Record<DuplicateKeyKind, number> = { offset: 0, event_id: 0 };
  let candidates: readonly KafkaRecord[] = records;
  const eventIds = new Map<KafkaRecord, string>();
  let eventIdsRecorded = 0;
  if (projection.dedupe.kind === "event-id" && candidates.length > 0) {
    const { fresh, inserted } = await recordEventIds(input, projection.dedupe, duplicates, eventIds);
    candidates = candidates.filter((r) => fresh.has(r));
    eventIdsRecorded = inserted;
  }

  // Step 5: size, decode, then apply in offset order; a permanent failure is rolled back to its savepoint.
  const decoded: DecodedRecord<T>[] = [];
  for (const record of candidates) {
    const size = recordBytes(record);
    if (size > input.maxRecordBytes) {
      await deadLetter(
        record,
        "RECORD_TOO_LARGE",
        `record is ${size} bytes, over REPLAYABLE_MAX_RECORD_BYTES=${input.maxRecordBytes} (key + value + headers)`,
      );
      continue;
    }
    try {
      decoded.push({ record, value: projection.decode(record), eventId: eventIds.get(record) });
    } catch (error) {
      await deadLetter(record, codeOf(error, "DECODE_FAILED"), recordErrorMessage(error));
    }
  }
  const ctx: ApplyContext = { client: input.client, db: drizzleOf(input.client), log };
  const applied = await applyDecoded(ctx, projection, decoded, deadLetter);
  return { applied, duplicates, eventIdsRecorded };
}

/** Step 4: records each first-seen id; returns the records to apply and counts the duplicates. */
async function recordEventIds<T>(
  input: ApplyRecordsInput<T>,
  key: Exclude<Projection["dedupe"], { kind: "offset" }>,
  duplicates: Record<DuplicateKeyKind, number>,
  eventIds: Map<KafkaRecord, string>,
): Promise<{ fresh: Set<KafkaRecord>; inserted: number }> {
  const { client, projection, topic, partition, records, deadLetter } = input;
  const firstById = new Map<string, { record: KafkaRecord; digest: string | null }>();
  const repeats: { record: KafkaRecord; id: string; digest: string | null }[] = [];
  for (const record of records) {
    let id: string;
    try {
      id = extractEventId(record, key);
    } catch (error) {
      await deadLetter(record, codeOf(error, "EVENT_ID_MISSING"), recordErrorMessage(error));
      continue;
    }
    const digest = valueDigest(record);
    if (firstById.has(id)) repeats.push({ record, id, digest });
    else firstById.set(id, { record, digest });
  }
  const { inserted, seen } = await insertEventIds(
    client,
    projection.name,
    topic,
    partition,
    [...firstById].map(([eventId, { record, digest }]) => ({
      eventId,
      offset: record.offset,
      valueSha256: digest,
    })),
  );
  const fresh = new Set<KafkaRecord>();
  // Where each id is recorded now: a repeat later in the batch is compared with that, not with its first copy here.
  const recorded = new Map<string, RecordedId>();
  for (const [id, { record, digest }] of firstById) {
    const prior: SeenEventId | undefined = seen.get(id);
    if (inserted.has(id) || prior === undefined) {
      recorded.set(id, { topic, partition, offset: record.offset, valueSha256: digest });
      if (inserted.has(id)) {
        fresh.add(record);
        eventIds.set(record, id);
      } else duplicates.event_id += 1; // recorded and removed meanwhile (pruned): never apply twice
      continue;
    }
    recorded.set(id, prior);
    const itself =
      input.retrying === true &&
      prior.topic === record.topic &&
      prior.partition === record.partition &&
      prior.offset === record.offset;
    if (itself) {
      fresh.add(record);
      eventIds.set(record, id);
    } else if (!sameDigest(prior.valueSha256, digest)) {
      await deadLetter(record, "EVENT_ID_REUSED", reusedMessage(id, prior));
    } else duplicates.event_id += 1;
  }
  for (const repeat of repeats) {
    const first = recorded.get(repeat.id);
    if (first !== undefined && !sameDigest(first.valueSha256, repeat.digest)) {
      await deadLetter(repeat.record, "EVENT_ID_REUSED", reusedMessage(repeat.id, first));
    } else duplicates.event_id += 1;
  }
  return { fresh, inserted: inserted.size };
}

function reusedMessage(id: string, first: RecordedId): string {
  return `event id ${JSON.stringify(id)} was first seen at ${first.topic}/${first.partition}@${first.offset} with a different value`;
}

async function applyDecoded<T>(
  ctx: ApplyContext,
  projection: Projection<T>,
  decoded: readonly DecodedRecord<T>[],
  deadLetter: DeadLetterSink,
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

/** Digests are hex strings (see valueDigest); null for a null value. */
function sameDigest(a: string | null, b: string | null): boolean {
  return a === b;
}
