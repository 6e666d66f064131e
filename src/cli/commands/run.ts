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

interface RunFlags extends ConnectionFlags {
  projection?: string;
  topic?: string[];
  group?: string;
  metricsHost?: string;
  metricsPort?: string;
  migrate: boolean;
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
  const { config } = setup;
  const projection = setup.projection();
  loadWebConfig(config.metrics.webConfigFile); // its problems before anything connects

  const log = createLogger(config.logLevel, { groupId: config.groupId, projection: projection.name });
  log.info(
    { brokers: config.kafka.brokers, database: redactUrl(config.databaseUrl), configFile: setup.configFile },
    "starting",
  );
  const unreachable = (error: unknown) => unreachableDatabase(config, error);
  if (flags.migrate) {
    await migrateAndCheck(config.databaseUrl, [projection], setup.configFile).catch((error: unknown) => {
      throw unreachable(error);
    });
  }
  // Before any record is read: TLS, credentials and the runtime grants (docs/security.md).
  await checkDatabase(config.databaseUrl, ["apply"], projection.tables).catch((error: unknown) => {
    throw unreachable(error);
  });
  const service = new ConsumerService({ config, projection, log });
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
