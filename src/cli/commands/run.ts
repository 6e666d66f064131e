/** `replayable run`: run one member of a projection's consumer group until a signal stops it. */
import { Command } from "commander";
import { ReplayableError, errorMessage } from "../../errors.js";
import {
  action,
  configFrom,
  metricsServerEnv,
  withConnectionOptions,
  withMetricsServerOptions,
  type ConnectionFlags,
  type MetricsServerFlags,
} from "../common.js";
import type { RegisteredProjection } from "../../projections/registry.js";
import { parseVersion } from "../../versions/versionNames.js";
import { commandTarget } from "../commandTarget.js";
import { runProjection } from "../runProjection.js";

interface RunFlags extends ConnectionFlags, MetricsServerFlags {
  projection?: string;
  topic?: string[];
  group?: string;
  migrate: boolean;
  version?: string;
}

/** Builds the `run` command. */
export function runCommand(): Command {
  return withMetricsServerOptions(withConnectionOptions(new Command("run")))
    .description(
      "consume the projection's topics as a consumer group member and apply each record effectively once",
    )
    .option(
      "--projection <name>",
      "projection to run, of the config file or an example (env REPLAYABLE_PROJECTION; default: the config file's only projection)",
    )
    .option("--topic <topic...>", "topics to consume (env REPLAYABLE_TOPICS; default: the projection's)")
    .option("--group <id>", "consumer group id (env REPLAYABLE_GROUP_ID; default: the projection name)")
    .option("--no-migrate", "do not apply pending migrations at start")
    .option(
      "--version <n>",
      'a versioned projection\'s version to run (default: its live one; docs/replay.md "Blue/green rebuild")',
    )
    .action(action(runAction));
}

/** Reads the config and the `--version` flag, then runs the member ({@link runProjection}). */
async function runAction(flags: RunFlags): Promise<void> {
  const setup = await configFrom(
    flags,
    {
      REPLAYABLE_PROJECTION: flags.projection,
      REPLAYABLE_TOPICS: flags.topic?.join(","),
      REPLAYABLE_GROUP_ID: flags.group,
      ...metricsServerEnv(flags),
    },
    { checkTables: true },
  );
  const { projection } = commandTarget(setup, { print: false });
  const version = versionFlag(projection, flags);
  const group = flags.group ?? (process.env.REPLAYABLE_GROUP_ID || undefined);
  await runProjection({ setup, projection, version, migrate: flags.migrate, group });
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
