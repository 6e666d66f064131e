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

export type { Logger };
