/** Structured JSON logs (pino) on stderr, so a command's own output on stdout stays clean. */
import { pino, type Logger } from "pino";

/**
 * Creates the process logger. Secrets never reach it: fields named like passwords or
 * connection URLs are censored, and callers log URLs through `redactUrl` (config.ts).
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
        ],
        censor: "***",
      },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}

export type { Logger };
