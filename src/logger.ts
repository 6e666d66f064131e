/** Structured JSON logs (pino) on stderr, so a command's own output on stdout stays clean. */
import { pino, type DestinationStream, type Logger } from "pino";
import { scrubSecrets } from "./secrets.js";

/**
 * Creates the process logger: one JSON object per line on stderr, `level` and above.
 * Secrets never reach stderr: fields named like passwords, SASL settings or connection URLs are
 * censored, and every line then passes through {@link scrubSecrets} (URL passwords and the
 * registered secrets become `***`), which also covers error messages and KafkaJS's own lines.
 * @param level pino level: fatal, error, warn, info, debug, trace or silent (`LOG_LEVEL`).
 * @param base fields on every line, e.g. `{ groupId, projection }`.
 */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
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
    scrubbingDestination(pino.destination({ fd: 2, sync: true })),
  );
}

/** A pino destination that scrubs secrets from each serialized line before writing it (synchronously). */
function scrubbingDestination(inner: DestinationStream): DestinationStream {
  return { write: (line: string) => inner.write(scrubSecrets(line)) };
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

export type { Logger };
