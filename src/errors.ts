/**
 * Coded errors. Every fault this library raises is a {@link ReplayableError}
 * with a stable `code`, the context it happened in, the `cause`, and whether a
 * retry can help (`canRetry`). Expected outcomes (a duplicate, a group still
 * active) are values, not errors.
 */

/**
 * The codes the engine dead-letters a record with (docs/dead-letters.md "Error codes"). A
 * projection's {@link PermanentRecordError} may carry any other {@link ErrorCode}.
 */
export const DEAD_LETTER_CODES = [
  "DECODE_FAILED",
  "EVENT_ID_MISSING",
  "EVENT_ID_REUSED",
  "RECORD_TOO_LARGE",
  "RECORD_TOO_MANY_HEADERS",
  "DATABASE_LIMIT_EXCEEDED",
  "APPLY_REJECTED",
] as const;

/** The stable error codes; the README's "Errors" section explains each. */
export const ERROR_CODES = [
  "CONFIG_INVALID",
  ...DEAD_LETTER_CODES,
  "TRANSIENT_DATABASE",
  "DATABASE",
  "KAFKA",
  "KAFKA_AUTHENTICATION",
  "KAFKA_AUTHORIZATION",
  "CHECKPOINT_AHEAD_OF_LOG",
  "PROJECTION_REBUILT",
  "RECORDS_NOT_ASCENDING",
  "PROJECTION_LOCKED",
  "GROUP_ACTIVE",
  "HISTORY_DELETED",
  "NOT_FOUND",
  "SHUTDOWN_TIMEOUT",
  "VERSION_MIGRATIONS_DIFFER",
  "NOT_MIGRATED",
] as const;

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** True when `code` is one of {@link ERROR_CODES}. */
export function isErrorCode(code: string): code is ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code);
}

/** Options for {@link ReplayableError}: what caused it, where, and whether a retry can help. */
export interface ReplayableErrorOptions {
  cause?: unknown;
  context?: Record<string, unknown>;
  canRetry?: boolean;
}

/** The base of every error this library throws. `context` is enumerable, so loggers print it. */
export class ReplayableError extends Error {
  readonly code: ErrorCode;
  readonly context: Record<string, unknown>;
  readonly canRetry: boolean;

  constructor(code: ErrorCode, message: string, options: ReplayableErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ReplayableError";
    this.code = code;
    this.context = options.context ?? {};
    this.canRetry = options.canRetry ?? false;
  }
}

/**
 * A record that cannot be applied for a reason a retry will not fix (bad bytes,
 * invalid fields, a constraint). The engine rolls back to the record's savepoint
 * and writes a dead letter with this code and message.
 */
export class PermanentRecordError extends ReplayableError {
  constructor(code: ErrorCode, message: string, options: ReplayableErrorOptions = {}) {
    super(code, message, { ...options, canRetry: false });
    this.name = "PermanentRecordError";
  }
}

/** Wraps an unknown thrown value once, keeping a ReplayableError as it is. */
export function asReplayableError(error: unknown, code: ErrorCode, message: string): ReplayableError {
  if (error instanceof ReplayableError) return error;
  return new ReplayableError(code, `${message}: ${errorMessage(error)}`, { cause: error });
}

/** The message of any thrown value. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How a PostgreSQL failure is handled: retry the whole transaction, or dead-letter the record. */
export type PgFailureKind = "transient" | "permanent" | "fault";

/** The retry reasons counted by `replayable_transaction_retries_total{reason}`. */
export type RetryReason =
  "serialization_failure" | "deadlock" | "lock_timeout" | "connection" | "unavailable" | "other";

/**
 * Classifies a PostgreSQL (or node-postgres) error by SQLSTATE, after
 * PostgreSQL's "Appendix A. PostgreSQL Error Codes". The error may be wrapped (drizzle-orm's
 * `DrizzleQueryError` keeps the node-postgres error as `cause`): the cause chain is searched.
 * - transient (abort the transaction and retry it): `40001` serialization_failure,
 *   `40P01` deadlock_detected, `55P03` lock_not_available (REPLAYABLE_LOCK_TIMEOUT_MS ran out),
 *   class `08` connection exception, `57P01`..`57P03` and `57P05` (admin shutdown, cannot
 *   connect now, idle_session_timeout), `25P03` idle_in_transaction_session_timeout,
 *   admin shutdown / cannot connect now, class `53` insufficient resources, and
 *   socket errors (ECONNRESET, ECONNREFUSED, a pool timeout, node-postgres's client-side
 *   "Query read timeout") without a SQLSTATE;
 * - permanent (the record's data is the problem: dead-letter it): class `22` data
 *   exception, class `23` integrity constraint violation, `21000` cardinality_violation, and the
 *   program limits a record's size or depth can exceed for good: `54000` program_limit_exceeded
 *   (e.g. "index row size 8016 exceeds btree version 4 maximum 2704": a key too long to index)
 *   and `54001` statement_too_complex (e.g. "stack depth limit exceeded" parsing a deeply nested
 *   JSON value); the same record fails the same way on every retry (issue 26, item 3). `54011`
 *   too_many_columns and `54023` too_many_arguments depend on the statement, not the record:
 *   faults;
 * - fault: anything else (a bug or a schema problem); retried like transient by
 *   the engine (never dead-lettered), so a fix and a restart resume without losing the record.
 */
export function classifyPgError(error: unknown): { kind: PgFailureKind; reason: RetryReason } {
  const code = sqlState(error);
  if (code === "40001") return { kind: "transient", reason: "serialization_failure" };
  if (code === "40P01") return { kind: "transient", reason: "deadlock" };
  if (code === "55P03") return { kind: "transient", reason: "lock_timeout" };
  // 25P03 and 57P05: the server ended the session for idling (in a transaction, or at all).
  if (code?.startsWith("08") || /^57P0[1235]$/.test(code ?? "") || code === "25P03")
    return { kind: "transient", reason: "connection" };
  if (code?.startsWith("53")) return { kind: "transient", reason: "unavailable" };
  // 21000 cardinality_violation: e.g. two rows of one set-based upsert hit the same key.
  if (code === "21000" || code?.startsWith("22") || code?.startsWith("23"))
    return { kind: "permanent", reason: "other" };
  if (code === "54000" || code === "54001") return { kind: "permanent", reason: "other" };
  if (code === undefined && causes(error).some(isConnectionError))
    return { kind: "transient", reason: "connection" };
  return { kind: "fault", reason: "other" };
}

/** The SQLSTATE of a node-postgres error (or of the first error in its `cause` chain that has one). */
export function sqlState(error: unknown): string | undefined {
  for (const e of causes(error)) {
    const code = ownSqlState(e);
    if (code !== undefined) return code;
  }
  return undefined;
}

function ownSqlState(error: object): string | undefined {
  const code = (error as { code?: unknown }).code;
  // SQLSTATE classes begin with a digit (08, 3D, 0A, 2B, ...), or are F0, HV, P0, XX (PostgreSQL
  // "Appendix A. Error Codes"); "EPIPE" is an errno, not a SQLSTATE.
  return typeof code === "string" && /^(?:[0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/.test(code)
    ? code
    : undefined;
}

/**
 * The dead-letter code of a record's permanent failure: a {@link ReplayableError}'s own code,
 * `DATABASE_LIMIT_EXCEEDED` for a PostgreSQL program limit (SQLSTATE class `54`: the message names
 * the limit, e.g. the index and its maximum row size), else `fallback`.
 */
export function recordErrorCode(error: unknown, fallback: ErrorCode): ErrorCode {
  if (error instanceof ReplayableError) return error.code;
  return sqlState(error)?.startsWith("54") === true ? "DATABASE_LIMIT_EXCEEDED" : fallback;
}

/** Longest error message stored with a dead letter, in characters. */
export const MAX_DEAD_LETTER_MESSAGE_LENGTH = 2000;

/**
 * The message stored with a dead letter: for a PostgreSQL error, its own message, SQLSTATE and
 * constraint (not a wrapper's SQL text and parameters); NUL characters shown as `\0` (a
 * PostgreSQL `text` value cannot hold U+0000, and V8's JSON.parse messages echo the input);
 * at most {@link MAX_DEAD_LETTER_MESSAGE_LENGTH} characters.
 */
export function recordErrorMessage(error: unknown): string {
  const pgError = causes(error).find((e) => ownSqlState(e) !== undefined);
  let message: string;
  if (pgError !== undefined) {
    const constraint = (pgError as { constraint?: unknown }).constraint;
    const details = [`SQLSTATE ${ownSqlState(pgError)}`];
    if (typeof constraint === "string") details.push(`constraint ${constraint}`);
    message = `${errorMessage(pgError)} (${details.join(", ")})`;
  } else message = errorMessage(error);
  message = message.replaceAll("\u0000", "\\0");
  return message.length > MAX_DEAD_LETTER_MESSAGE_LENGTH
    ? `${message.slice(0, MAX_DEAD_LETTER_MESSAGE_LENGTH - 1)}…`
    : message;
}

/** `error` and its `cause` chain (at most 10 deep), objects only. */
function causes(error: unknown): object[] {
  const chain: object[] = [];
  let current: unknown = error;
  while (typeof current === "object" && current !== null && chain.length < 10 && !chain.includes(current)) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

const CONNECTION_ERRNOS = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

function isConnectionError(error: object): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && CONNECTION_ERRNOS.has(code)) return true;
  const message = errorMessage(error);
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|terminating connection|Client was closed and is not queryable/i.test(
    message,
  );
}
