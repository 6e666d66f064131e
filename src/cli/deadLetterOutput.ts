/** How `replayable dead-letters` prints dead letters and reads its time flags. */
import { ReplayableError } from "../errors.js";
import { isUtf8 } from "../engine/dedupeKeys.js";
import { daysInMonth } from "../replay/timeSpecs.js";
import { scrubSecrets } from "../secrets/secrets.js";
import type { DeadLetter } from "../sql/selectDeadLetters.js";
import { terminalSafe } from "../text/terminalText.js";

/** Bytes as printed: UTF-8 text when the bytes are valid UTF-8, else base64; null stays null. */
export interface BytesView {
  readonly encoding: "utf8" | "base64";
  readonly data: string;
  /** Length in bytes. */
  readonly bytes: number;
}

/** {@link BytesView} of `bytes` (null for a null key or value). */
export function bytesView(bytes: Buffer | null): BytesView | null {
  if (bytes === null) return null;
  return isUtf8(bytes)
    ? { encoding: "utf8", data: bytes.toString("utf8"), bytes: bytes.length }
    : { encoding: "base64", data: bytes.toString("base64"), bytes: bytes.length };
}

/** `unresolved`, or the resolution (`applied`, `duplicate`, `discarded`, `superseded`). */
export function stateOf(letter: DeadLetter): string {
  return letter.resolution ?? "unresolved";
}

/**
 * The dead letter's error message with secrets hidden ({@link scrubSecrets}): the engine scrubs a
 * message before storing it, and this hides what a row stored before that, or a secret registered
 * only in this process, still holds (docs/security.md "Secrets").
 */
function errorText(letter: DeadLetter): string {
  return scrubSecrets(letter.errorMessage);
}

/** One line of `dead-letters list`'s table; the caller's table printer escapes control characters. */
export function listRow(letter: DeadLetter): Record<string, string | number> {
  const { record } = letter;
  return {
    id: letter.id,
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    code: letter.errorCode,
    attempts: letter.attempts,
    created: letter.createdAt.toISOString(),
    state: stateOf(letter),
    message: truncate(terminalSafe(errorText(letter)), 80),
  };
}

/** A dead letter as JSON: metadata always; key, value and headers (as {@link BytesView}s) when `withBytes`. */
export function letterJson(letter: DeadLetter, withBytes: boolean): Record<string, unknown> {
  const { record } = letter;
  const json: Record<string, unknown> = {
    id: letter.id,
    projection: letter.projection,
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    timestamp: timestampIso(record.timestamp),
    error: { code: letter.errorCode, message: errorText(letter) },
    attempts: letter.attempts,
    createdAt: letter.createdAt.toISOString(),
    lastAttemptAt: letter.lastAttemptAt?.toISOString() ?? null,
    publishedAt: letter.publishedAt?.toISOString() ?? null,
    state: stateOf(letter),
    resolvedAt: letter.resolvedAt?.toISOString() ?? null,
    resolvedBy: letter.resolvedBy,
    bytesDeletedAt: letter.bytesDeletedAt?.toISOString() ?? null,
    keyBytes: record.key?.length ?? null,
    valueBytes: record.value?.length ?? null,
  };
  if (withBytes) {
    json.key = bytesView(record.key);
    json.value = bytesView(record.value);
    json.headers = Object.fromEntries(
      Object.entries(record.headers).map(([name, values]) => [name, values.map((v) => bytesView(v))]),
    );
  }
  return json;
}

/** Longest value `show` prints in text form, characters; JSON output prints everything. */
export const SHOW_TEXT_LIMIT = 4096;

/**
 * `dead-letters show` in text form: the metadata, then key, value and headers. Every line is
 * {@link terminalSafe}: the record's bytes, its header names and the error message (which may
 * quote them, as JSON.parse's does) print no control character.
 */
export function showText(letter: DeadLetter): string {
  const { record } = letter;
  const lines = [
    `dead letter ${letter.id} (projection ${letter.projection})`,
    `  record      ${record.topic}/${record.partition}@${record.offset}  timestamp ${timestampIso(record.timestamp) ?? "-"}`,
    `  error       ${letter.errorCode}: ${errorText(letter)}`,
    `  attempts    ${letter.attempts}  (created ${letter.createdAt.toISOString()}, last retry ${letter.lastAttemptAt?.toISOString() ?? "-"})`,
    `  state       ${stateOf(letter)}${letter.resolvedAt ? ` at ${letter.resolvedAt.toISOString()} by ${letter.resolvedBy ?? "?"}` : ""}`,
    `  published   ${letter.publishedAt ? letter.publishedAt.toISOString() : "no"}`,
  ];
  if (letter.bytesDeletedAt !== null) {
    lines.push(`  bytes       deleted at ${letter.bytesDeletedAt.toISOString()}`);
    return `${lines.map(terminalSafe).join("\n")}\n`;
  }
  lines.push(`  key         ${describeBytes(bytesView(record.key))}`);
  lines.push(`  value       ${describeBytes(bytesView(record.value))}`);
  const headers = Object.entries(record.headers);
  lines.push(`  headers     ${headers.length === 0 ? "(none)" : ""}`.trimEnd());
  for (const [name, values] of headers) {
    for (const value of values) lines.push(`    ${name}: ${describeBytes(bytesView(value))}`);
  }
  return `${lines.map(terminalSafe).join("\n")}\n`;
}

function describeBytes(view: BytesView | null): string {
  if (view === null) return "null";
  const shown = truncate(view.data, SHOW_TEXT_LIMIT, " … (truncated; --output json prints all)");
  return `(${view.encoding}, ${view.bytes} bytes) ${view.encoding === "utf8" ? JSON.stringify(shown) : shown}`;
}

function truncate(text: string, max: number, marker = "…"): string {
  return text.length > max ? `${text.slice(0, max)}${marker}` : text;
}

function timestampIso(ms: string): string | null {
  const n = Number(ms);
  return Number.isFinite(n) && n >= 0 ? new Date(n).toISOString() : null;
}

/**
 * Parses `--since`/`--until`: an ISO-8601 date-time (`2026-01-31T12:00:00Z`, a date alone means
 * midnight UTC) or a duration back from `now` (`90s`, `15m`, `2h`, `7d`).
 * @throws ReplayableError CONFIG_INVALID naming the flag and the accepted forms.
 */
export function parseTimeFlag(flag: string, value: string | undefined, now = Date.now()): Date | undefined {
  if (value === undefined) return undefined;
  const duration = /^(\d+)(s|m|h|d)$/.exec(value);
  if (duration) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[duration[2] as "s" | "m" | "h" | "d"];
    const date = new Date(now - Number(duration[1]) * unit);
    // Before PostgreSQL's first timestamptz (4714-11-24 BC), or past JavaScript's dates (NaN):
    // refused here, not sent to PostgreSQL as "0NaN-…" or out of its range.
    if (date.getTime() >= POSTGRES_MIN_TIMESTAMP_MS) return date;
  }
  const parts =
    /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/.exec(
      value,
    );
  // Only days and times that exist: Date would roll 2026-02-30 over to 2026-03-02.
  if (parts !== null && calendarValid(parts)) {
    const date = new Date(value.length === 10 ? `${value}T00:00:00Z` : value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new ReplayableError(
    "CONFIG_INVALID",
    `${flag}: "${value}" is not a time; give an ISO-8601 date-time such as 2026-01-31T12:00:00Z, or a duration back from now such as 90s, 15m, 2h or 7d`,
  );
}

/** PostgreSQL's earliest timestamptz, 4714-11-24 00:00:00 BC (Julian day 0), as epoch ms (year -4713). */
const POSTGRES_MIN_TIMESTAMP_MS = Date.UTC(-4713, 10, 24);

/** Whether the date-time's year, month, day, hour, minute and second name a day and time that exist. */
function calendarValid(parts: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map((p) => Number(p ?? "0")) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}
