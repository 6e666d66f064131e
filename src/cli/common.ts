/** What the CLI commands share: connection flags, config loading, output and error reporting. */
import { Command, Option } from "commander";
import { loadConfig, type Config, type ConfigVariable } from "../config.js";
import { ReplayableError, errorMessage } from "../errors.js";
import { createKafka } from "../kafka/client.js";
import { createLogger, type Logger } from "../logger.js";
import { projectionNames } from "../projections/registry.js";
import { scrubSecrets } from "../secrets.js";

/** Flags every command that talks to Kafka or PostgreSQL takes (each overrides its variable). */
export interface ConnectionFlags {
  brokers?: string;
  databaseUrl?: string;
  logLevel?: string;
}

/** Adds --brokers, --database-url and --log-level to `command`. */
export function withConnectionOptions(command: Command): Command {
  return command
    .addOption(new Option("--brokers <list>", "Kafka bootstrap brokers, host:port,... (env KAFKA_BROKERS)"))
    .addOption(new Option("--database-url <url>", "PostgreSQL URL (env DATABASE_URL)"))
    .addOption(new Option("--log-level <level>", "fatal|error|warn|info|debug|trace|silent (env LOG_LEVEL)"));
}

/** Loads the config from the environment with `flags` and `extra` overriding variables. */
export function configFrom(
  flags: ConnectionFlags,
  extra: Partial<Record<ConfigVariable, string | undefined>> = {},
): Config {
  return loadConfig(process.env, {
    KAFKA_BROKERS: flags.brokers,
    DATABASE_URL: flags.databaseUrl,
    LOG_LEVEL: flags.logLevel,
    ...extra,
  });
}

/** The CLI's logger: JSON lines on stderr; "warn" unless configured, except for `run`. */
export function cliLogger(config: Config, fallback = "warn"): Logger {
  const level =
    process.env.LOG_LEVEL === undefined && config.logLevel === "info" ? fallback : config.logLevel;
  return createLogger(level, { groupId: config.groupId });
}

/** A KafkaJS client for one-off commands. */
export function cliKafka(config: Config, log: Logger) {
  return createKafka({ brokers: config.kafka.brokers, clientId: `${config.kafka.clientId}-cli`, log });
}

/** The `--output table|json` option the reporting commands share (any other value is a usage error). */
export function outputOption(): Option {
  return new Option("--output <format>", "table or json").choices(["table", "json"]).default("table");
}

/** Prints rows as an aligned text table on stdout. */
export function printTable(rows: readonly Record<string, string | number>[]): void {
  const first = rows[0];
  if (first === undefined) {
    process.stdout.write("(no rows)\n");
    return;
  }
  const columns = Object.keys(first);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  process.stdout.write(`${line(columns)}\n`);
  for (const row of rows) process.stdout.write(`${line(columns.map((c) => String(row[c] ?? "")))}\n`);
}

/** Prints `value` as JSON on stdout (bigints as strings). */
export function printJson(value: unknown): void {
  process.stdout.write(
    `${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`,
  );
}

/** Prints `replayable: <message>` on stderr, secrets scrubbed (see secrets.ts). */
export function printError(message: string): void {
  process.stderr.write(`replayable: ${scrubSecrets(message)}\n`);
}

/**
 * Wraps a command action: a thrown error prints `replayable: <message>` on stderr (secrets
 * scrubbed) and exits 2 for a configuration error, 1 otherwise.
 */
export function action<A extends unknown[]>(
  fn: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (error) {
      printError(errorMessage(error));
      process.exitCode = error instanceof ReplayableError && error.code === "CONFIG_INVALID" ? 2 : 1;
    }
  };
}

/** Parses a flag as a whole number within [min, max]. @throws ReplayableError CONFIG_INVALID naming the flag. */
export function intFlag(
  name: string,
  value: string | undefined,
  min: number,
  max: number,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${name}: "${value}" must be a whole number from ${min} to ${max}`,
    );
  }
  return Number(value);
}

/** Parses a flag as a fraction in [0, 1). @throws ReplayableError CONFIG_INVALID naming the flag. */
export function rateFlag(name: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const rate = Number(value);
  if (!/^\d*\.?\d+$/.test(value) || !(rate >= 0 && rate < 1)) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${name}: "${value}" must be a fraction from 0 up to (not including) 1, e.g. 0.1`,
    );
  }
  return rate;
}

/**
 * The projection whose checkpoints `status` and `replay` compare with when no --projection is
 * given: REPLAYABLE_PROJECTION, else the group id when it names a shipped projection.
 * @throws ReplayableError CONFIG_INVALID (exit 2) when neither says which projection.
 */
export function projectionFor(groupId: string): string {
  const fromEnv = process.env.REPLAYABLE_PROJECTION;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  if (projectionNames().includes(groupId)) return groupId;
  throw new ReplayableError(
    "CONFIG_INVALID",
    `--projection: group ${groupId} is not the name of a projection (${projectionNames().join(", ")}); say whose checkpoints to compare with --projection or REPLAYABLE_PROJECTION`,
  );
}
