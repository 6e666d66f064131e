/**
 * The member `run` is: migrate (optionally), check PostgreSQL, then run the consumer service until
 * a signal stops it. Shared by `run` and by `rebuild --blue-green --execute`, which goes on as the
 * new version's member (docs/replay.md "Blue/green rebuild").
 */
import { redactUrl, type Config } from "../config.js";
import { ReplayableError, classifyPgError, errorMessage } from "../errors.js";
import { ConsumerService } from "../engine/consumerService.js";
import { checkVersionedRunPrivileges } from "../db/privileges.js";
import { checkDatabase } from "../db/startupCheck.js";
import { createPool } from "../db/pool.js";
import { loadWebConfig } from "../metrics/webConfig.js";
import { assertPlatformaticPatched, loadPlatformaticKafka } from "../kafka/platformatic/loadClient.js";
import { noBrokerAnswers } from "../kafka/accessCheck.js";
import { createLogger, stderrDestination } from "../logger.js";
import { createMetrics, type Metrics } from "../metrics/metrics.js";
import type { Projection } from "../projection.js";
import type { RegisteredProjection } from "../projections/registry.js";
import { resolveVersion } from "../versions/resolveVersion.js";
import { checkCodeOfVersion } from "../versions/versionMigrations.js";
import type { VersionedInstance } from "../versions/versionNames.js";
import { exitCodeOf, printError, reportedError, type CliSetup } from "./common.js";
import { onShutdownSignals } from "./signals.js";
import { targetTopics } from "./commandTarget.js";
import { checkGroupOfVersion } from "./versionTarget.js";
import { migrateAndCheck } from "./commands/migrate.js";

/** What {@link runProjection} runs. */
export interface RunTarget {
  readonly setup: Pick<CliSetup, "config" | "configFile">;
  readonly projection: RegisteredProjection;
  /** A versioned projection's version to run; undefined: its live one (ignored for a plain projection). */
  readonly version?: number | undefined;
  /** Apply pending migrations first (`run`'s default; `--no-migrate` turns it off). */
  readonly migrate: boolean;
  /**
   * The group the operator named (`--group` or REPLAYABLE_GROUP_ID), if any: for a versioned
   * projection it must be the version's group or the group the version was created from.
   */
  readonly group?: string | undefined;
}

/**
 * Migrates (unless `migrate` is false), checks PostgreSQL, then runs the consumer service (which
 * checks Kafka access first) until the first SIGTERM/SIGINT stops it gracefully (a second forces
 * the exit, src/cli/signals.ts); a failed run prints its error and sets the process's exit code
 * ({@link exitCodeOf}).
 * @throws ReplayableError for a bad web config file, KAFKA_CLIENT=platformatic on a Node.js too old
 *   for it (CONFIG_INVALID), an unreachable PostgreSQL (naming
 *   DATABASE_URL), a `--group` that is not the version's (CONFIG_INVALID), a version whose migrations
 *   are not the code's (VERSION_MIGRATIONS_DIFFER) or a failed start (Kafka
 *   unreachable, access denied).
 */
export async function runProjection(target: RunTarget): Promise<void> {
  const { setup, projection: registered } = target;
  loadWebConfig(setup.config.metrics.webConfigFile); // its problems before anything connects
  // A Node.js too old for @platformatic/kafka fails here, before migrating, logging the start or
  // serving /metrics: a setting that cannot run, like any bad setting; so does a library without
  // replayable's patch.
  if (setup.config.kafka.client === "platformatic") assertPlatformaticPatched(await loadPlatformaticKafka());
  const unreachable = (error: unknown) => unreachableDatabase(setup.config, error);
  if (target.migrate) {
    await migrateAndCheck(setup.config.databaseUrl, [registered], setup.configFile).catch(
      (error: unknown) => {
        throw unreachable(error);
      },
    );
  }
  const { config, projection } = await versionToRun(setup.config, registered, target).catch(
    (error: unknown) => {
      throw unreachable(error);
    },
  );

  const log = createLogger(
    config.logLevel,
    { groupId: config.groupId, projection: projection.name },
    stderrDestination(config.logFormat),
  );
  log.info(
    {
      brokers: config.kafka.brokers,
      database: redactUrl(config.databaseUrl),
      configFile: setup.configFile,
      topics: targetTopics(config, projection),
    },
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
    // A Kafka client's error is about the brokers, not PostgreSQL (checked above).
    const named = fromKafkaClient(error)
      ? ((await noBrokerAnswers(config.kafka.brokers)) ?? error)
      : unreachable(error);
    throw reportedError(named, kafka);
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
 * The config and projection the member runs: as given for a plain projection; for a versioned one,
 * the version's engine instance (dedupe key `<name>@v<N>`, search_path `<name>_v<N>`) and group.
 * @throws ReplayableError VERSION_MIGRATIONS_DIFFER when the version's schema lacks migrations of
 *   the code's folder or has some it does not declare (src/versions/versionMigrations.ts).
 */
async function versionToRun(
  config: Config,
  projection: RegisteredProjection,
  target: Pick<RunTarget, "version" | "group">,
): Promise<{ config: Config; projection: Projection<unknown> }> {
  if (projection.versioned !== true) return { config, projection };
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    await checkVersionedRunPrivileges(pool); // the registry's grant, before reading it
    const resolved = await resolveVersion(pool, projection, target.version);
    checkGroupOfVersion(projection.name, resolved.row, target.group);
    // Before any record is read: the code must be the code the version's schema was made for.
    await checkCodeOfVersion(pool, projection, resolved.row.version);
    return { config: { ...config, groupId: resolved.row.groupId }, projection: resolved.instance };
  } finally {
    await pool.end();
  }
}

/**
 * True when `error` or one of its causes comes from a Kafka client: KafkaJS's (their names begin
 * with "KafkaJS") or @platformatic/kafka's (their codes begin with "PLT_KFK_", its errors.js; a
 * spent retry is a `MultipleErrors` "metadata failed 4 times." whose own code says so).
 */
function fromKafkaClient(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; typeof e === "object" && e !== null && depth < 10; depth++) {
    const { name, code } = e as { name?: unknown; code?: unknown };
    if (typeof name === "string" && name.startsWith("KafkaJS")) return true;
    // PLT_KFK_USER is the library refusing an option: a bug here, not the brokers.
    if (typeof code === "string" && code.startsWith("PLT_KFK_") && code !== "PLT_KFK_USER") return true;
    e =
      (e as { cause?: unknown; originalError?: unknown }).cause ??
      (e as { originalError?: unknown }).originalError;
  }
  return false;
}

/**
 * A connection error at start, as an error naming the setting: an unreachable server at start is
 * more often a wrong URL than an outage. Other errors are returned as they are.
 */
function unreachableDatabase(config: Config, error: unknown): unknown {
  return classifyPgError(error).reason === "connection"
    ? new ReplayableError(
        "DATABASE",
        `cannot reach PostgreSQL at ${redactUrl(config.databaseUrl)} (DATABASE_URL, --database-url or the config file's databaseUrl): ${errorMessage(error)}`,
        { cause: error },
      )
    : error;
}
