/**
 * Structured logs (pino) on stderr, so a command's own output on stdout stays clean: JSON lines,
 * or readable lines (pino-pretty) on a terminal or with LOG_FORMAT=pretty.
 */
import { pino, stdSerializers, type DestinationStream, type Logger } from "pino";
import { prettyFactory } from "pino-pretty";
import { scrubLogLine } from "./secrets/secrets.js";

/** The values of LOG_FORMAT: one JSON object per line, or readable lines (pino-pretty). */
export const LOG_FORMATS = ["json", "pretty"] as const;

/** One of {@link LOG_FORMATS}. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * The format logs are written in: `format` when set (LOG_FORMAT), else `pretty` when stderr is a
 * terminal (a person reads it) and `json` otherwise (a log shipper, a file, a pipe reads it).
 */
export function resolveLogFormat(format: LogFormat | undefined, stderrIsTTY: boolean): LogFormat {
  return format ?? (stderrIsTTY ? "pretty" : "json");
}

/**
 * The CLI's log destination: stderr (fd 2, synchronous writes) in the format of
 * {@link resolveLogFormat}; pretty lines are coloured only on a terminal.
 */
export function stderrDestination(format: LogFormat | undefined): DestinationStream {
  const stderr = pino.destination({ fd: 2, sync: true });
  const tty = process.stderr.isTTY;
  return resolveLogFormat(format, tty) === "pretty" ? prettyDestination(stderr, tty) : stderr;
}

/**
 * A destination that writes each JSON log line to `inner` as one readable line (pino-pretty's
 * formatter, synchronously): `[HH:MM:ss.l] INFO: message`, then the line's other fields.
 */
export function prettyDestination(inner: DestinationStream, colorize: boolean): DestinationStream {
  const format = prettyFactory({
    colorize,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname",
    singleLine: true,
  });
  return { write: (line: string) => inner.write(format(line)) };
}

/**
 * Creates the process logger: one JSON object per line on stderr, `level` and above.
 * Secrets never reach stderr: fields named like passwords, SASL settings or connection URLs are
 * censored, and every line then passes through {@link scrubLogLine} (URL passwords and the
 * registered secrets become `***`), which also covers error messages and KafkaJS's own lines.
 * Errors under `err` are compact ({@link errSerializer}).
 * @param level pino level: fatal, error, warn, info, debug, trace or silent (`LOG_LEVEL`).
 * @param base fields on every line, e.g. `{ groupId, projection }`.
 * @param destination where the scrubbed lines go; default stderr (fd 2, synchronous writes).
 */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  destination: DestinationStream = pino.destination({ fd: 2, sync: true }),
): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: errSerializer },
      redact: {
        paths: [
          "password",
          "*.password",
          "sasl",
          "*.sasl",
          "databaseUrl",
          "*.databaseUrl",
          "connectionString",
          "*.connectionString",
        ],
        censor: "***",
      },
    },
    scrubbingDestination(destination),
  );
}

/** A pino destination that scrubs secrets from each serialized line before writing it (synchronously). */
function scrubbingDestination(inner: DestinationStream): DestinationStream {
  return { write: (line: string) => inner.write(scrubLogLine(line)) };
}

/**
 * A child of `log` binding those of `fields` it does not already carry with the same value, so a
 * JSON line never repeats a key (pino does not merge a child's bindings with its parent's).
 */
export function withBindings(log: Logger, fields: Record<string, unknown>): Logger {
  const bound = log.bindings();
  const missing = Object.fromEntries(Object.entries(fields).filter(([key, value]) => bound[key] !== value));
  return Object.keys(missing).length === 0 ? log : log.child(missing);
}

/** How deep {@link errSerializer} looks into plain fields (objects and arrays) for class instances. */
const MAX_DEPTH = 6;

/**
 * pino's `err` serializer, compact: pino's standard one (type, message and stack with every
 * cause's appended, and each enumerable field of the error), except that an object that is
 * neither plain data (an object literal, an array, a Date) nor an error is replaced by its class
 * name, e.g. `"[Client]"`, at any depth. node-postgres's pool sets `err.client` (the whole pg
 * Client with its prepared statements, ~5 KB of JSON) on an idle client's error; sockets, KafkaJS
 * brokers and Buffers are as big. Errors in fields (KafkaJS's `originalError`) are serialized the
 * same way; a ReplayableError's `context` and pg's fields (`code`, `detail`, …) are kept.
 * @returns the serialized error; any value that is not an error (no string `message`) unchanged.
 */
export function errSerializer(err: unknown): unknown {
  if (!isErrorLike(err)) return err;
  return compact(stdSerializers.err(err), 0, new Set());
}

function isErrorLike(value: unknown): value is Error {
  return typeof value === "object" && value !== null && typeof (value as Error).message === "string";
}

function compact(value: unknown, depth: number, seen: Set<object>): unknown {
  if (typeof value !== "object" || value === null || value instanceof Date) return value;
  if (seen.has(value) || depth > MAX_DEPTH) return "[…]";
  const proto: unknown = Object.getPrototypeOf(value);
  const plain = Array.isArray(value) || proto === Object.prototype || proto === null;
  // pino's serialized errors (nested ones included) have a prototype of their own.
  const serializedError = !plain && isErrorLike(value) && !(value instanceof Error);
  if (!plain && !serializedError) {
    if (value instanceof Error) return compact(stdSerializers.err(value), depth, seen);
    return `[${(value as { constructor?: { name?: string } }).constructor?.name ?? "Object"}]`;
  }
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => compact(item, depth + 1, seen));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = compact(item, depth + 1, seen);
  return out;
}

export type { Logger };
