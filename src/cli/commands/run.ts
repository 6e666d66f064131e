/** `replayable run`: run one member of a projection's consumer group until a signal stops it. */
import { Command } from "commander";
import { redactUrl, type Config } from "../../config.js";
import { ReplayableError, classifyPgError, errorMessage } from "../../errors.js";
import { ConsumerService } from "../../engine/consumerService.js";
import { checkDatabase } from "../../db/startupCheck.js";
import { loadWebConfig } from "../../metrics/webConfig.js";
import { createLogger } from "../../logger.js";
import {
  action,
  configFrom,
  exitCodeOf,
  printError,
  reportedError,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { onShutdownSignals } from "../signals.js";
import { migrateAndCheck } from "./migrate.js";
import { createPool } from "../../db/pool.js";
import type { Projection } from "../../projection.js";
import type { RegisteredProjection } from "../../projections/registry.js";
import { resolveVersion } from "../../versions/resolveVersion.js";
import { parseVersion, type VersionedInstance } from "../../versions/versionNames.js";
import { createMetrics, type Metrics } from "../../metrics/metrics.js";

interface RunFlags extends ConnectionFlags {
  projection?: string;
  topic?: string[];
  group?: string;
  metricsHost?: string;
  metricsPort?: string;
  migrate: boolean;
  version?: string;
}

/** Builds the `run` command. */
export function runCommand(): Command {
  return withConnectionOptions(new Command("run"))
    .description(
      "consume the projection's topics as a consumer group member and apply each record effectively once",
    )
    .option(
      "--projection <name>",
      "projection to run, of the config file or an example (env REPLAYABLE_PROJECTION; default: the config file's only projection)",
    )
    .option("--topic <topic...>", "topics to consume (env REPLAYABLE_TOPICS; default: the projection's)")
    .option("--group <id>", "consumer group id (env REPLAYABLE_GROUP_ID; default: the projection name)")
    .option("--metrics-host <host>", "host for /metrics, /healthz, /readyz (env REPLAYABLE_METRICS_HOST)")
    .option("--metrics-port <port>", "port for /metrics (env REPLAYABLE_METRICS_PORT; 0 picks a free one)")
    .option("--no-migrate", "do not apply pending migrations at start")
    .option(
      "--version <n>",
      'a versioned projection\'s version to run (default: its live one; docs/replay.md "Blue/green rebuild")',
    )
    .action(action(runAction));
}

/**
 * Migrates (unless `--no-migrate`), checks PostgreSQL, then runs the consumer service (which
 * checks Kafka access first) until a signal stops it; a failed run prints its error and sets its
 * exit code.
 */
async function runAction(flags: RunFlags): Promise<void> {
  const setup = await configFrom(
    flags,
    {
      REPLAYABLE_PROJECTION: flags.projection,
      REPLAYABLE_TOPICS: flags.topic?.join(","),
      REPLAYABLE_GROUP_ID: flags.group,
      REPLAYABLE_METRICS_HOST: flags.metricsHost,
      REPLAYABLE_METRICS_PORT: flags.metricsPort,
    },
    { checkTables: true },
  );
  const registered = setup.projection();
  const version = versionFlag(registered, flags);
  loadWebConfig(setup.config.metrics.webConfigFile); // its problems before anything connects
  const unreachable = (error: unknown) => unreachableDatabase(setup.config, error);
  if (flags.migrate) {
    await migrateAndCheck(setup.config.databaseUrl, [registered], setup.configFile).catch(
      (error: unknown) => {
        throw unreachable(error);
      },
    );
  }
  const { config, projection } = await versionToRun(setup.config, registered, version).catch(
    (error: unknown) => {
      throw unreachable(error);
    },
  );

  const log = createLogger(config.logLevel, { groupId: config.groupId, projection: projection.name });
  log.info(
    { brokers: config.kafka.brokers, database: redactUrl(config.databaseUrl), configFile: setup.configFile },
    "starting",
  );
  // Before any record is read: TLS, credentials and the runtime grants (docs/security.md).
  await checkDatabase(config.databaseUrl, ["apply"], projection.tables).catch((error: unknown) => {
    throw unreachable(error);
  });
  const service = new ConsumerService({ config, projection, log, metrics: metricsFor(projection) });
  const kafka = service.kafkaAccess;
  const removeHandlers = onShutdownSignals(() => service.stop(), config.shutdownTimeoutMs, log);
  try {
    await service.start();
  } catch (error) {
    await service.stop();
    throw reportedError(unreachable(error), kafka);
  }
  const outcome = await service.done;
  removeHandlers();
  if (outcome.kind === "failed") {
    const error = reportedError(outcome.error, kafka);
    printError(errorMessage(error));
    process.exitCode = exitCodeOf(error);
  }
}

/**
 * The member's metrics: a new registry; a blue/green version's carries the label `version="<N>"`
 * on every sample (prom-client's default labels), so two versions' members are told apart.
 */
function metricsFor(projection: Projection<unknown>): Metrics {
  const metrics = createMetrics();
  const version = (projection as Partial<VersionedInstance>).version;
  if (version !== undefined) metrics.registry.setDefaultLabels({ version: String(version) });
  return metrics;
}

/**
 * The `--version` flag of a versioned projection, parsed; undefined when not given.
 * @throws ReplayableError CONFIG_INVALID when it is not a number, or given for a projection that
 *   is not versioned.
 */
function versionFlag(projection: RegisteredProjection, flags: RunFlags): number | undefined {
  if (flags.version === undefined) return undefined;
  if (projection.versioned !== true)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `--version: projection ${projection.name} is not versioned (defineProjection({ versioned: true }) opts in to blue/green versions)`,
    );
  try {
    return parseVersion(flags.version);
  } catch (error) {
    throw new ReplayableError("CONFIG_INVALID", errorMessage(error));
  }
}

/**
 * The config and projection the member runs: as given for a plain projection; for a versioned one,
 * the version's engine instance (dedupe key `<name>@v<N>`, search_path `<name>_v<N>`) and group.
 */
async function versionToRun(
  config: Config,
  projection: RegisteredProjection,
  version: number | undefined,
): Promise<{ config: Config; projection: Projection<unknown> }> {
  if (projection.versioned !== true) return { config, projection };
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    const resolved = await resolveVersion(pool, projection, version);
    return { config: { ...config, groupId: resolved.row.groupId }, projection: resolved.instance };
  } finally {
    await pool.end();
  }
}

/**
 * A connection error at start, as an error naming the setting: an unreachable server at start is
 * more often a wrong URL than an outage. Other errors are returned as they are.
 */
function unreachableDatabase(config: Config, error: unknown): unknown {
  return classifyPgError(error).reason === "connection"
    ? new ReplayableError(
        "DATABASE",
        `cannot reach PostgreSQL at ${redactUrl(config.databaseUrl)} (DATABASE_URL or --database-url): ${errorMessage(error)}`,
        { cause: error },
      )
    : error;
}
