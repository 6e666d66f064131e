/** What the CLI commands share: connection flags, config loading, output and error reporting. */
import { basename } from "node:path";
import { Command, Option } from "commander";
import { parseConfig, type Config, type ConfigVariable, type FileSettings } from "../config.js";
import { findConfigFile } from "../configFile/findConfigFile.js";
import { importConfigFile } from "../configFile/importConfigFile.js";
import { parseConfigFile } from "../configFile/parseConfigFile.js";
import { explainConnectionError } from "../db/connectionProblem.js";
import { explainNotMigrated } from "../db/notMigrated.js";
import { createPool } from "../db/pool.js";
import { ReplayableError, classifyPgError, errorMessage } from "../errors.js";
import { checkKafkaAccess } from "../kafka/accessCheck.js";
import type { ClusterAdmin } from "../kafka/admin.js";
import { connectClusterAdmin } from "../kafka/clients.js";
import { createKafka } from "../kafka/client.js";
import { kafkaSecurityFailure, type FailureContext, type TopicOperation } from "../kafka/securityFailure.js";
import { createLogger, stderrDestination, type Logger } from "../logger.js";
import { ProjectionRegistry, type RegisteredProjection } from "../projections/registry.js";
import { scrubSecrets, urlPasswordSpan } from "../secrets/secrets.js";
import { missingTables } from "../sql/tableExists.js";
import { terminalSafe } from "../text/terminalText.js";
import { formatTable, recordRows } from "../text/textTable.js";

/** Flags every command that talks to Kafka or PostgreSQL takes (each overrides its variable). */
export interface ConnectionFlags {
  config?: string;
  brokers?: string;
  databaseUrl?: string;
  logLevel?: string;
}

/** The flags of the member's metrics server (`run`, and `rebuild --blue-green --execute` going on as a member). */
export interface MetricsServerFlags {
  metricsHost?: string;
  metricsPort?: string;
}

/** Adds --metrics-host and --metrics-port to `command`. */
export function withMetricsServerOptions(command: Command): Command {
  return command
    .option("--metrics-host <host>", "host for /metrics, /healthz, /readyz (env REPLAYABLE_METRICS_HOST)")
    .option("--metrics-port <port>", "port for /metrics (env REPLAYABLE_METRICS_PORT; 0 picks a free one)");
}

/** The config variables {@link withMetricsServerOptions}'s flags set. */
export function metricsServerEnv(flags: MetricsServerFlags): Record<string, string | undefined> {
  return { REPLAYABLE_METRICS_HOST: flags.metricsHost, REPLAYABLE_METRICS_PORT: flags.metricsPort };
}

/** Adds --config, --brokers, --database-url and --log-level to `command`. */
export function withConnectionOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--config <path>",
        "config file (env REPLAYABLE_CONFIG; default: replayable.config.{ts,mts,js,mjs} in the working directory)",
      ),
    )
    .addOption(new Option("--brokers <list>", "Kafka bootstrap brokers, host:port,... (env KAFKA_BROKERS)"))
    .addOption(new Option("--database-url <url>", "PostgreSQL URL (env DATABASE_URL)"))
    .addOption(new Option("--log-level <level>", "fatal|error|warn|info|debug|trace|silent (env LOG_LEVEL)"));
}

/** What a command starts from: the parsed config and the projections it can name. */
export interface CliSetup {
  readonly config: Config;
  readonly projections: ProjectionRegistry;
  /** The config file read, if any. */
  readonly configFile: string | undefined;
  /**
   * Where the projection, group and topics came from: `named` by a flag or variable, the config
   * `file` (its only projection, or a setting), or the `default` (the group is the projection's
   * name, the topics are the projection's).
   */
  readonly sources: Readonly<Record<"projection" | "group" | "topics", SettingSource>>;
  /**
   * The projection the command acts on: the one named by --projection or REPLAYABLE_PROJECTION;
   * else the one named like `group` (status, replay); else the config file's `projection` setting
   * or its only projection; else the example `ledger` when there is no config file.
   * @throws ReplayableError CONFIG_INVALID when the name is unknown or the config file has several
   *   projections and none is named.
   */
  projection(group?: string): RegisteredProjection;
}

/** Where a setting came from: a flag or variable, the config file, or its default. */
export type SettingSource = "named" | "file" | "default";

/** Options of {@link configFrom}. */
export interface SetupOptions {
  /**
   * Also report, with the other problems, the config file's projections without a migrations
   * folder whose tables are missing from the database (those with one are checked after `migrate`);
   * only the named one's when the command is given a projection (flag, variable or the file's
   * `projection`). `"with-other-problems"`: only when there are other problems to report anyway
   * (for `migrate`, whose migrations may create those tables).
   */
  readonly checkTables?: boolean | "with-other-problems";
}

/**
 * Reads the config file (if any), the environment and the flags (`flags` and `extra`, keyed by
 * variable), in that order of precedence, and builds the projection registry.
 * @throws ReplayableError CONFIG_INVALID (exit 2) listing every problem of the file, the variables
 *   and the flags at once.
 */
export async function configFrom(
  flags: ConnectionFlags,
  extra: Partial<Record<ConfigVariable, string | undefined>> = {},
  options: SetupOptions = {},
): Promise<CliSetup> {
  const overrides = {
    KAFKA_BROKERS: flags.brokers,
    DATABASE_URL: flags.databaseUrl,
    LOG_LEVEL: flags.logLevel,
    ...extra,
  };
  const { problems, configured, configFile, settings: file } = await readConfigFile(flags.config);
  problems.unshift(...emptyFlagProblems(flags));
  const parsed = parseConfig(process.env, overrides, file);
  if (!parsed.ok) problems.push(...parsed.problems);
  const given = (v: string | undefined) => v !== undefined && v !== "";
  const sourceOf = (
    v: "REPLAYABLE_PROJECTION" | "REPLAYABLE_GROUP_ID" | "REPLAYABLE_TOPICS",
  ): SettingSource =>
    given(overrides[v]) || given(process.env[v]) ? "named" : given(file?.values[v]) ? "file" : "default";
  const checkTables =
    options.checkTables === true || (options.checkTables === "with-other-problems" && problems.length > 0);
  if (parsed.ok && checkTables && configFile !== undefined) {
    // A command given one projection checks its tables only: another's missing table is no reason to refuse it.
    const target = sourceOf("REPLAYABLE_PROJECTION") === "default" ? undefined : parsed.config.projection;
    problems.push(
      ...(await unmigratedTableProblems(parsed.config.databaseUrl, configured, target, configFile)),
    );
  }
  if (problems.length > 0 || !parsed.ok) {
    throw new ReplayableError("CONFIG_INVALID", `invalid configuration:\n${problems.join("\n")}`);
  }
  const config = parsed.config;
  if (flags.databaseUrl !== undefined && urlHasPassword(flags.databaseUrl))
    createLogger(config.logLevel, {}, stderrDestination(config.logFormat)).warn(
      "--database-url holds a password, and the command line of a process is readable by every local user (ps, /proc); put the URL in a file only you can read and name it with DATABASE_URL_FILE",
    );
  const projections = new ProjectionRegistry(configured);
  const sources = {
    projection: sourceOf("REPLAYABLE_PROJECTION"),
    group: sourceOf("REPLAYABLE_GROUP_ID"),
    topics: sourceOf("REPLAYABLE_TOPICS"),
  };
  const fromFile = file?.values.REPLAYABLE_PROJECTION !== undefined;
  const chosen = projectionChooser({
    projections,
    configured,
    configFile,
    name: config.projection,
    explicit: sources.projection === "named",
    fromFile,
    // Where REPLAYABLE_PROJECTION came from, as parseConfig's problems say it.
    source: given(overrides.REPLAYABLE_PROJECTION)
      ? " (from a command-line flag)"
      : !given(process.env.REPLAYABLE_PROJECTION) && fromFile
        ? ` (from ${file.label}: ${file.names.REPLAYABLE_PROJECTION ?? "REPLAYABLE_PROJECTION"})`
        : "",
  });
  return { config, projections, configFile, sources, projection: chosen };
}

/**
 * {@link tableProblems} for the config file's projections without a migrations folder: only
 * `target`'s when a projection was named (flag, variable or the file's `projection`), else all.
 */
async function unmigratedTableProblems(
  databaseUrl: string,
  configured: readonly RegisteredProjection[],
  target: string | undefined,
  configFile: string,
): Promise<string[]> {
  const checked = configured.filter(
    (p) => p.migrationsFolder === undefined && (target === undefined || p.name === target),
  );
  return tableProblems(databaseUrl, checked, basename(configFile));
}

/** What {@link projectionChooser} chooses from. */
interface ProjectionChoice {
  readonly projections: ProjectionRegistry;
  readonly configured: readonly RegisteredProjection[];
  readonly configFile: string | undefined;
  /** REPLAYABLE_PROJECTION's value (or the default). */
  readonly name: string;
  /** Whether a flag or variable named the projection. */
  readonly explicit: boolean;
  /** Whether the config file names it (its `projection`, or its only projection). */
  readonly fromFile: boolean;
  /** Where the name came from, as parseConfig's problems say it (" (from a command-line flag)"). */
  readonly source: string;
}

/** {@link CliSetup.projection}: the rule of its docstring over `choice`. */
function projectionChooser(choice: ProjectionChoice): (group?: string) => RegisteredProjection {
  const { projections, configured, configFile } = choice;
  return (group?: string) => {
    if (choice.explicit) return projections.get(choice.name, choice.source);
    if (group !== undefined && projections.has(group)) return projections.get(group);
    if (choice.fromFile) return projections.get(choice.name, choice.source);
    if (configured.length > 1)
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--projection: ${basename(configFile ?? "the config file")} has ${configured.length} projections (${configured.map((p) => p.name).join(", ")}); name one with --projection or REPLAYABLE_PROJECTION`,
      );
    if (group !== undefined)
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--projection: group ${group} is not the name of a projection (${projections.names().join(", ")}); say whose checkpoints to compare with --projection or REPLAYABLE_PROJECTION`,
      );
    return projections.get(choice.name);
  };
}

/** The flags (commander's camelCase keys) that stand for a variable, a config-file setting or a default. */
const FLAGS_WITH_FALLBACK: ReadonlySet<string> = new Set([
  "config",
  "brokers",
  "databaseUrl",
  "logLevel",
  "projection",
  "topic",
  "group",
  "metricsHost",
  "metricsPort",
]);

/**
 * One problem line per flag given an empty value (`--brokers ''`, `--topic ''`): an empty flag would
 * otherwise fall back silently to the variable, the config file or the default. `flags` are the
 * command's options as commander parsed them (camelCase keys, named back as `--kebab-case`).
 */
export function emptyFlagProblems(flags: object): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(flags)) {
    const empty =
      typeof value === "string"
        ? value.trim() === ""
        : Array.isArray(value) && value.some((v) => typeof v === "string" && v.trim() === "");
    if (!empty) continue;
    const flag = `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    const fallback = FLAGS_WITH_FALLBACK.has(key)
      ? " to use its variable, the config file or the default"
      : "";
    problems.push(`  ${flag}: is empty; give it a value, or leave the flag out${fallback}`);
  }
  return problems;
}

/** Whether connection URL `url` holds a password: in its userinfo, or as a `password` or `sslpassword` query parameter. */
function urlHasPassword(url: string): boolean {
  const span = urlPasswordSpan(url);
  return (span !== undefined && span.end > span.start) || /[?&](?:ssl)?password=[^&#]/i.test(url);
}

/** What {@link readConfigFile} found: the file's settings and projections, and its problems (indented lines). */
interface ConfigFileRead {
  problems: string[];
  configured: readonly RegisteredProjection[];
  configFile: string | undefined;
  settings: FileSettings | undefined;
}

/**
 * Finds (`--config`, REPLAYABLE_CONFIG, or the working directory's replayable.config.ts), imports
 * and parses the config file. A file with exactly one projection and no REPLAYABLE_PROJECTION
 * setting names that projection. No file found is no problem; a named file missing is one.
 */
async function readConfigFile(flag: string | undefined): Promise<ConfigFileRead> {
  const problems: string[] = [];
  const location = findConfigFile(flag, process.env, process.cwd());
  if (location.kind === "missing") {
    problems.push(
      `  ${location.setting}=${location.path}: no such file; give the path of a replayable.config.ts`,
    );
    return { problems, configured: [], configFile: undefined, settings: undefined };
  }
  if (location.kind !== "found")
    return { problems, configured: [], configFile: undefined, settings: undefined };
  const loaded = await importConfigFile(location.path);
  if (!loaded.ok) {
    problems.push(`  ${basename(location.path)}: ${loaded.problem}`);
    return { problems, configured: [], configFile: location.path, settings: undefined };
  }
  const parsed = parseConfigFile(location.path, loaded.value);
  problems.push(...parsed.problems);
  let file = parsed.settings;
  const only = parsed.projections.length === 1 ? parsed.projections[0] : undefined;
  if (only !== undefined && file.values.REPLAYABLE_PROJECTION === undefined) {
    file = {
      ...file,
      values: { ...file.values, REPLAYABLE_PROJECTION: only.name },
      names: { ...file.names, REPLAYABLE_PROJECTION: "projections[0].name" },
    };
  }
  return { problems, configured: parsed.projections, configFile: location.path, settings: file };
}

/**
 * One problem line per table of `projections` missing from the database. Empty when the database
 * cannot be reached: the command itself then reports that, naming DATABASE_URL.
 */
async function tableProblems(
  databaseUrl: string,
  projections: readonly RegisteredProjection[],
  label: string,
): Promise<string[]> {
  if (projections.length === 0) return [];
  const pool = createPool({ connectionString: databaseUrl, max: 1 });
  try {
    const problems = await missingTableProblems(pool, projections, label);
    // A projection's own checks (a zero-code sink's mapping) only once its tables exist.
    for (const projection of projections) {
      if (
        projection.validate === undefined ||
        problems.some((p) => p.includes(`projection ${projection.name}:`))
      )
        continue;
      problems.push(...(await projection.validate(pool)).map((line) => `  ${label}: ${line}`));
    }
    return problems;
  } catch (error) {
    const explained = explainConnectionError(error, databaseUrl);
    if (explained !== undefined) throw explained;
    if (classifyPgError(error).reason === "connection") return [];
    throw error;
  } finally {
    await pool.end();
  }
}

/**
 * One problem line per table of `projections` that does not exist, naming the fix.
 * @param label the config file's name, for the lines.
 */
export async function missingTableProblems(
  pool: Parameters<typeof missingTables>[0],
  projections: readonly RegisteredProjection[],
  label: string,
): Promise<string[]> {
  const problems: string[] = [];
  for (const projection of projections) {
    for (const table of await missingTables(pool, projection.tables)) {
      const fix =
        projection.migrationsFolder === undefined
          ? (projection.missingTableFix ??
            "create it, e.g. with a migrations folder (defineProjection({ migrations })) applied by `replayable migrate`")
          : `its migrations (${projection.migrationsFolder}) do not create it; add a migration that does and run \`replayable migrate\` again`;
      problems.push(
        `  ${label}: projection ${projection.name}: table ${table} does not exist in the database; ${fix}`,
      );
    }
  }
  return problems;
}

/** The CLI's logger on stderr (LOG_FORMAT: JSON or readable lines); "warn" unless configured, except for `run`. */
export function cliLogger(config: Config, fallback = "warn"): Logger {
  const level =
    process.env.LOG_LEVEL === undefined && config.logLevel === "info" ? fallback : config.logLevel;
  return createLogger(level, { groupId: config.groupId }, stderrDestination(config.logFormat));
}

/** What a command reads or changes in Kafka, for the access check and its messages. */
export interface KafkaNeeds {
  readonly groupId?: string | undefined;
  /**
   * `Read` to commit the group's offsets (replay/rebuild --execute), `Describe` to read them,
   * `Delete` to delete the group (drop-version).
   */
  readonly groupOperation?: "Read" | "Describe" | "Delete";
  readonly topics?: readonly string[];
  readonly topicOperations?: readonly TopicOperation[];
  /** Other groups whose committed offsets the command reads (Describe). */
  readonly describedGroups?: readonly string[];
}

/** The context of the last Kafka connection a command made: {@link action} names ACLs with it. */
let kafkaContext: FailureContext | undefined;

/**
 * Checks the connection and the ACLs `needs` names ({@link checkKafkaAccess}: a refused login, TLS
 * handshake or ACL fails at once, exit 2), then connects the command's admin client.
 */
export async function cliAdmin(config: Config, log: Logger, needs: KafkaNeeds = {}): Promise<ClusterAdmin> {
  const context: FailureContext = {
    security: config.kafka.security,
    brokers: config.kafka.brokers,
    ...needs,
  };
  kafkaContext = context;
  await checkKafkaAccess({
    ...context,
    describedGroups: needs.describedGroups,
    failWhenNoBrokerAnswers: true,
    clientId: `${config.kafka.clientId}-cli`,
    log,
  });
  return connectClusterAdmin({
    kafka: config.kafka,
    clientId: `${config.kafka.clientId}-cli`,
    kafkajs: cliKafka(config, log),
  });
}

/** A KafkaJS client for one-off commands, with the configured TLS and SASL. */
export function cliKafka(config: Config, log: Logger) {
  return createKafka({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-cli`,
    log,
    security: config.kafka.security,
  });
}

/** The `--output table|json` option the reporting commands share (any other value is a usage error). */
export function outputOption(): Option {
  return new Option("--output <format>", "table or json").choices(["table", "json"]).default("table");
}

/** Prints rows as an aligned text table on stdout, every cell {@link terminalSafe} (cells may hold record data). */
export function printTable(rows: readonly Record<string, string | number>[]): void {
  const first = rows[0];
  if (first === undefined) {
    process.stdout.write("(no rows)\n");
    return;
  }
  const safe = rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [terminalSafe(k), typeof v === "string" ? terminalSafe(v) : v]),
    ),
  );
  for (const line of formatTable(recordRows(safe))) process.stdout.write(`${line}\n`);
}

/**
 * Prints `value` as JSON on stdout (bigints as strings). JSON.stringify escapes C0 controls; DEL,
 * C1 controls and bidi controls are written as `\uHHHH` escapes too, so the text is the same JSON
 * (it parses to the same strings) and prints no control character on a terminal.
 */
export function printJson(value: unknown): void {
  const json = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2);
  process.stdout.write(`${jsonTerminalSafe(json)}\n`);
}

/** Characters JSON.stringify leaves raw that a terminal acts on (they occur only inside JSON strings). */
const JSON_UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `json` with {@link JSON_UNSAFE} characters as `\uHHHH` escapes: the same JSON value. */
export function jsonTerminalSafe(json: string): string {
  return json.replace(JSON_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Prints `replayable: <message>` on stderr, secrets scrubbed (see secrets.ts), each line {@link terminalSafe}. */
export function printError(message: string): void {
  const safe = scrubSecrets(message).split("\n").map(terminalSafe).join("\n");
  process.stderr.write(`replayable: ${safe}\n`);
}

/** Error codes that a restart does not fix and the operator must act on: exit 2, like bad flags. */
const EXIT_2_CODES: ReadonlySet<string> = new Set([
  "CONFIG_INVALID",
  "NOT_MIGRATED",
  "KAFKA_AUTHENTICATION",
  "KAFKA_AUTHORIZATION",
  "VERSION_MIGRATIONS_DIFFER",
]);

/**
 * The exit code for `error`: 2 for a configuration, login, TLS or ACL problem, a database never
 * migrated, or a version whose migrations are not the code's; 1 otherwise.
 */
export function exitCodeOf(error: unknown): number {
  return error instanceof ReplayableError && EXIT_2_CODES.has(error.code) ? 2 : 1;
}

/**
 * `error` as reported: PostgreSQL's 42P01 on one of replayable's relations becomes NOT_MIGRATED
 * naming `replayable migrate` (db/notMigrated.ts); a Kafka login, TLS or authorization failure
 * anywhere in its cause chain becomes the error naming what to set or grant (securityFailure.ts),
 * with `context` (the last connection's, by default) naming the group and topics.
 */
export function reportedError(error: unknown, context = kafkaContext): unknown {
  if (error instanceof ReplayableError && EXIT_2_CODES.has(error.code)) return error;
  return explainNotMigrated(error) ?? (context && kafkaSecurityFailure(error, context)) ?? error;
}

/**
 * Wraps a command action: a thrown error prints `replayable: <message>` on stderr (secrets
 * scrubbed) and exits 2 for a configuration, Kafka login, TLS or ACL error, 1 otherwise.
 */
export function action<A extends unknown[]>(
  fn: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (error) {
      const reported = reportedError(error);
      printError(errorMessage(reported));
      process.exitCode = exitCodeOf(reported);
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
