/**
 * `replayable dead-letters retry`: re-applies one dead letter through the same dedupe-then-effect
 * path as the consumer ({@link applyRecords}), in a transaction of its own that also resolves the
 * dead letter, so a record that now succeeds is applied once and marked `applied` together.
 */
import type pg from "pg";
import type { Logger } from "pino";
import { withTransaction } from "../db/withTransaction.js";
import { ReplayableError, type ErrorCode } from "../errors.js";
import type { Projection } from "../projection.js";
import { lockDeadLetter, type DeadLetter } from "../sql/selectDeadLetters.js";
import { recordDeadLetterAttempt } from "../sql/recordDeadLetterAttempt.js";
import { resolveDeadLetter } from "../sql/resolveDeadLetter.js";
import { selectSupersedingRebuild } from "../sql/selectSupersedingRebuild.js";
import { laterOffsets } from "../sql/laterOffsets.js";
import type { OffsetString } from "../offsets.js";
import { applyRecords } from "./applyRecords.js";

/** What a retry did; expected outcomes are values, faults are thrown. */
export type RetryOutcome =
  /** Applied now, once; the dead letter is resolved as `applied`. */
  | { readonly kind: "applied" }
  /** Its event id was applied from another record meanwhile; resolved as `duplicate`, nothing applied. */
  | { readonly kind: "duplicate" }
  /**
   * Written before rebuild `rebuildId`, which emptied the projection and handed the record back to
   * the consumer: it is read again there (applied, a duplicate, or dead-lettered anew), so this
   * letter is resolved as `superseded` and never applied. Only letters written before a version
   * whose rebuild resolves them itself can still be unresolved here.
   */
  | { readonly kind: "superseded"; readonly rebuildId: string }
  /**
   * Not applied: the projection's last write of a key wins (`retryAfterLaterRecords: false`) and
   * `other` offsets after the letter and below the partition's `checkpoint` are not dead letters
   * left unapplied: records applied already (or duplicates skipped, or transaction markers, which
   * only the log tells apart), so applying it now could overwrite a newer value of its key or bring
   * back a deleted row. Nothing changed; still unresolved (`outOfOrder` applies it).
   */
  | { readonly kind: "later_records"; readonly checkpoint: OffsetString; readonly other: string }
  /** Failed again: `attempts` + 1, the error replaced by this one; still unresolved. */
  | { readonly kind: "failed"; readonly code: ErrorCode; readonly message: string }
  /** Resolved before (by another retry or a discard); nothing done. */
  | { readonly kind: "already_resolved"; readonly resolution: string }
  | { readonly kind: "not_found" };

/** Inputs of {@link retryDeadLetter}. */
export interface RetryDeadLetterInput<T> {
  readonly client: pg.PoolClient;
  /** The dead letter's projection (its `projection` column must name it). */
  readonly projection: Projection<T>;
  /** The dead letter's id (decimal string). */
  readonly id: string;
  /** Size limit, bytes (REPLAYABLE_MAX_RECORD_BYTES); raise it to retry RECORD_TOO_LARGE letters. */
  readonly maxRecordBytes: number;
  /** REPLAYABLE_MAX_RECORD_HEADERS; raise it to retry RECORD_TOO_MANY_HEADERS letters. Default 1000. */
  readonly maxRecordHeaders?: number;
  /**
   * Apply the letter even when records after it in its partition were applied already, for a
   * projection with `retryAfterLaterRecords: false` (`dead-letters retry --out-of-order`). Default false.
   */
  readonly outOfOrder?: boolean;
  /**
   * Longest wait for a row lock, ms (REPLAYABLE_LOCK_TIMEOUT_MS: PostgreSQL's `lock_timeout`); the
   * retry then fails with SQLSTATE 55P03, nothing changed. Default 0: no limit.
   */
  readonly lockTimeoutMs?: number;
  /** Who retries, e.g. `alice@host`, stored in `resolved_by`. */
  readonly resolvedBy: string;
  readonly log: Logger;
}

/**
 * Retries one dead letter: `BEGIN`, lock its row (`FOR UPDATE`: two retries serialize), apply the
 * record with {@link applyRecords} (`retrying`: an event id recorded at the letter's own position
 * is the letter itself), resolve or count the attempt, `COMMIT`. The checkpoint is not touched:
 * it is already past the record. In event-id mode a re-send applied meanwhile makes it a duplicate.
 * A letter written before a rebuild that handed its record back to the consumer is never applied
 * (the consumer reads that record again): it is resolved as `superseded` (docs/design.md "Dead
 * letters and rebuilds"). A projection whose last write of a key wins (`retryAfterLaterRecords:
 * false`) gets the letter applied only while every offset after it below the checkpoint is a dead
 * letter left unapplied ({@link laterOffsets}), unless `outOfOrder`: `later_records` otherwise,
 * nothing changed.
 * @throws ReplayableError NOT_FOUND when the letter belongs to another projection.
 * @throws the database error of a transient failure (nothing was changed; run the retry again).
 */
export async function retryDeadLetter<T>(input: RetryDeadLetterInput<T>): Promise<RetryOutcome> {
  const { client, projection, id, log } = input;
  return withTransaction(
    client,
    async (): Promise<RetryOutcome> => {
      const letter = await lockDeadLetter(client, id);
      if (letter === undefined) return { kind: "not_found" };
      if (letter.projection !== projection.name) {
        throw new ReplayableError(
          "NOT_FOUND",
          `dead letter ${id} belongs to projection ${letter.projection}, not ${projection.name}`,
        );
      }
      if (letter.resolvedAt !== null)
        return { kind: "already_resolved", resolution: letter.resolution ?? "" };
      return retryUnresolved(input, letter);
    },
    { searchPath: projection.searchPath, lockTimeoutMs: input.lockTimeoutMs, log },
  );
}

/** The unresolved letter's retry, inside the open transaction. */
async function retryUnresolved<T>(input: RetryDeadLetterInput<T>, letter: DeadLetter): Promise<RetryOutcome> {
  const { client, projection, id, log } = input;
  const rebuildId = await selectSupersedingRebuild(client, id);
  if (rebuildId !== undefined) {
    await resolveDeadLetter(client, id, "superseded", input.resolvedBy);
    return { kind: "superseded", rebuildId };
  }
  const { record } = letter;
  if (projection.retryAfterLaterRecords === false && input.outOfOrder !== true) {
    const later = await laterOffsets(client, projection.name, record, true);
    if (later !== undefined && BigInt(later.other) > 0n)
      return { kind: "later_records", checkpoint: later.checkpoint, other: later.other };
  }
  let failure: { code: ErrorCode; message: string } | undefined;
  const result = await applyRecords({
    client,
    projection,
    topic: record.topic,
    partition: record.partition,
    records: [record],
    maxRecordBytes: input.maxRecordBytes,
    maxRecordHeaders: input.maxRecordHeaders,
    log: log.child({ topic: record.topic, partition: record.partition, offset: record.offset }),
    retrying: true,
    deadLetter: (_record, code, message) => {
      failure = { code, message };
      return Promise.resolve();
    },
  });
  if (result.applied === 1) {
    await resolveDeadLetter(client, id, "applied", input.resolvedBy);
    return { kind: "applied" };
  }
  if (failure !== undefined) {
    await recordDeadLetterAttempt(client, id, failure.code, failure.message);
    return { kind: "failed", ...failure };
  }
  await resolveDeadLetter(client, id, "duplicate", input.resolvedBy);
  return { kind: "duplicate" };
}
