/**
 * `replayable promote --projection P --version N`: make a caught-up shadow version live, switching
 * the stable views in one transaction (docs/design.md "Blue/green versions").
 */
import { Command } from "commander";
import { createPool } from "../../db/pool.js";
import { promote } from "../../versions/promote.js";
import { resolveVersion } from "../../versions/resolveVersion.js";
import {
  action,
  cliAdmin,
  cliLogger,
  configFrom,
  intFlag,
  outputOption,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { reportSwap, versionOption, versionedProjection } from "../versionCommand.js";
import { ReplayableError } from "../../errors.js";
import { inCommandSpan, outcomeAttributes } from "../../tracing/tracing.js";

interface PromoteFlags extends ConnectionFlags {
  projection?: string;
  version: string;
  topic?: string[];
  maxLag: string;
  allowDifferent?: boolean;
  waitMs?: string;
  lockTimeoutMs?: string;
  output: "table" | "json";
}

/** Builds the `promote` command. */
export function promoteCommand(): Command {
  return withConnectionOptions(new Command("promote"))
    .description(
      "make a shadow version of a versioned projection live: readers' views switch to it in one transaction, once it has caught up and its tables equal the live version's",
    )
    .option("--projection <name>", "the versioned projection (env REPLAYABLE_PROJECTION)")
    .requiredOption("--version <n>", "the shadow version to promote")
    .option(
      "--topic <topic...>",
      "more topics to measure its lag on, besides every topic either version's group has committed offsets for (never fewer)",
    )
    .option("--max-lag <records>", "the largest lag allowed on any partition", "0")
    .option("--allow-different", "promote even though its tables differ from the live version's (printed)")
    .option(
      "--wait-ms <ms>",
      "how long to wait for both versions to reach the same checkpoints (default 30000)",
    )
    .option(
      "--lock-timeout-ms <ms>",
      "lock_timeout of the switch: a reader holding a view longer fails it (default 5000)",
    )
    .addOption(outputOption())
    .action(action(promoteAction));
}

/** Checks the shadow and promotes it, printing the comparison. */
async function promoteAction(flags: PromoteFlags): Promise<void> {
  const setup = await configFrom(flags, {
    REPLAYABLE_PROJECTION: flags.projection,
    REPLAYABLE_TOPICS: flags.topic?.join(","),
  });
  const { config } = setup;
  const projection = versionedProjection(setup, "promote");
  const version = versionOption(flags.version);
  if (!/^\d{1,19}$/.test(flags.maxLag))
    throw new ReplayableError(
      "CONFIG_INVALID",
      `--max-lag: "${flags.maxLag}" must be a whole number of records`,
    );
  const waitMs = intFlag("--wait-ms", flags.waitMs, 0, 3_600_000, 30_000);
  const lockTimeoutMs = intFlag("--lock-timeout-ms", flags.lockTimeoutMs, 1, 3_600_000, 5_000);
  const log = cliLogger(config);
  const attributes = { "replayable.projection": projection.name, "replayable.version": version };
  const traced = { tracesExporter: config.tracesExporter, log };
  await inCommandSpan(traced, "promote", attributes, async (_tracing, annotate) => {
    const pool = createPool({ connectionString: config.databaseUrl, max: 2 });
    try {
      const { row } = await resolveVersion(pool, projection, version);
      // The lag and the audit row read both versions' committed offsets: both groups are checked.
      const live = await resolveVersion(pool, projection);
      const admin = await cliAdmin(config, log, {
        groupId: row.groupId,
        groupOperation: "Describe",
        topics: config.topics,
        topicOperations: ["Describe"],
        describedGroups: live.row.groupId === row.groupId ? [] : [live.row.groupId],
      });
      try {
        const outcome = await promote({
          admin,
          pool,
          projection,
          version,
          topics: config.topics,
          maxLag: BigInt(flags.maxLag),
          allowDifferent: flags.allowDifferent === true,
          waitMs,
          lockTimeoutMs,
        });
        annotate(outcomeAttributes(outcome));
        reportSwap(projection.name, "promote", outcome, flags.output);
      } finally {
        await admin.close();
      }
    } finally {
      await pool.end();
    }
  });
}
