/**
 * The retry policy of a failed batch transaction, as a pure function: what to do after the
 * partition's `attempt`-th failure in a row. The retry timing lives here and nowhere else.
 */
import { backoffDelayMs } from "../support/backoff.js";
import { ReplayableError, classifyPgError, type PgFailureKind, type RetryReason } from "../errors.js";

/**
 * Consecutive failed transactions of a partition after which it counts as paused
 * (`replayable_paused_partitions`, the "partition paused" log line): a serialization failure or
 * deadlock clears within these; more means an outage or a fault. The partition is not fetched
 * while it waits (its worker holds the batch), and every other partition keeps going either way.
 */
export const ATTEMPTS_BEFORE_PAUSE = 3;

/** The back-off bounds, ms (REPLAYABLE_RETRY_INITIAL_MS and REPLAYABLE_RETRY_MAX_MS). */
export interface RetryTiming {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * What to do with a failed transaction:
 * - `retry`: run it again from memory after `delayMs` (a transient failure, or a fault such as a
 *   missing table: never dead-lettered, so a fix and a restart resume without losing the record);
 * - `pause`: the same, but the partition has failed {@link ATTEMPTS_BEFORE_PAUSE} times in a row
 *   and counts as paused until the delay ends;
 * - `dropGeneration`: PROJECTION_REBUILT, the batch was fetched before a rebuild, in a generation
 *   that ended: neither retried nor fatal; the worker drops the generation's batches and waits for
 *   the next generation, which reads from the offsets the rebuild reset (docs/design.md);
 * - `fatal`: a failure no retry can fix (a {@link ReplayableError} that says so): the member stops.
 * `kind` and `reason` classify the error by SQLSTATE ({@link classifyPgError}) for logs and metrics.
 */
export type RetryDecision =
  | {
      readonly action: "retry" | "pause";
      readonly delayMs: number;
      readonly kind: PgFailureKind;
      readonly reason: RetryReason;
    }
  | { readonly action: "dropGeneration"; readonly error: ReplayableError }
  | { readonly action: "fatal"; readonly error: ReplayableError };

/**
 * Decides after the `attempt`-th consecutive failure (1-based) of a partition's transaction. The
 * delay is exponential in `attempt` with equal jitter ({@link backoffDelayMs}, src/support/backoff.ts).
 * @param random for tests: a source of [0, 1) values.
 */
export function decide(
  error: unknown,
  attempt: number,
  timing: RetryTiming,
  random: () => number = Math.random,
): RetryDecision {
  if (error instanceof ReplayableError && error.code === "PROJECTION_REBUILT")
    return { action: "dropGeneration", error };
  if (error instanceof ReplayableError && !error.canRetry) return { action: "fatal", error };
  const { kind, reason } = classifyPgError(error);
  const delayMs = backoffDelayMs(attempt - 1, timing.initialMs, timing.maxMs, random);
  return { action: attempt >= ATTEMPTS_BEFORE_PAUSE ? "pause" : "retry", delayMs, kind, reason };
}
