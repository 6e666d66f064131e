/** Structured JSON logs (pino) on stderr, so a command's own output on stdout stays clean. */
import { pino, stdSerializers, type DestinationStream, type Logger } from "pino";
import { scrubLogLine } from "./secrets.js";

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
