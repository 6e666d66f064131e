/**
 * `replayable rebuild`: recompute a projection from the log. Kafka first (the group to the log
 * start offsets), then one transaction empties the derived tables and the dedupe state and writes
 * an audit row into replayable.rebuilds. A dry run unless --execute.
 */
import { Command } from "commander";
import { checkDatabase } from "../../db/startupCheck.js";
import { rebuild, type RebuildOutcome } from "../../replay/rebuild.js";
import { ReplayableError } from "../../errors.js";
import { blueGreenRebuild } from "../../versions/blueGreenRebuild.js";
import { reportBlueGreen } from "./rebuildBlueGreenReport.js";
import { loadWebConfig } from "../../metrics/webConfig.js";
import { createLogger, stderrDestination } from "../../logger.js";
import type { RegisteredProjection } from "../../projections/registry.js";
import { commandTarget } from "../commandTarget.js";
import { runProjection } from "../runProjection.js";
import {
  action,
  outputOption,
  cliLogger,
  configFrom,
  printJson,
  printTable,
  withConnectionOptions,
  metricsServerEnv,
  withMetricsServerOptions,
  type CliSetup,
  type ConnectionFlags,
  type MetricsServerFlags,
} from "../common.js";
import { withCommandResources } from "../commandResources.js";
import { inCommandSpan, outcomeAttributes } from "../../tracing/tracing.js";

interface RebuildFlags extends ConnectionFlags, MetricsServerFlags {
  projection?: string;
  group?: string;
  topic?: string[];
  execute?: boolean;
  force?: boolean;
  blueGreen?: boolean;
  /** False with `--no-run`: `--blue-green --execute` creates the version and exits. */
  run: boolean;
  output: "table" | "json";
}

/** Builds the `rebuild` command. */
export function rebuildCommand(): Command {
  return withMetricsServerOptions(withConnectionOptions(new Command("rebuild")))
    .description(
      "recompute a projection from the log: reset the group to the log start offsets, then empty the projection's tables and dedupe state in one transaction; a dry run unless --execute",
    )
    .option(
      "--projection <name>",
      "projection to rebuild, of the config file or an example (env REPLAYABLE_PROJECTION; default: the config file's only projection)",
    )
    .option(
      "--group <id>",
      "the projection's consumer group, which must be inactive (env REPLAYABLE_GROUP_ID; default: the projection's name)",
    )
    .option(
      "--topic <topic...>",
      "the projection's topics (env REPLAYABLE_TOPICS; default: the topics the group has committed offsets for or the projection has checkpoints for, else its default topics); topics it has checkpoints for are always included",
    )
    .option("--execute", "do it (refused while the group has members or a run holds the projection)")
    .option(
      "--force",
      "rebuild even though records were deleted (a log start offset above 0) or may have been compacted away (cleanup.policy=compact), or the group has no committed offsets where the projection has checkpoints (it consumes the projection from now on)",
    )
    .option(
      "--blue-green",
      "a versioned projection: build its next version from the log beside the live one (schema <name>_v<N+1>, group <group>-v<N+1>); the live version keeps serving until `promote`; with --execute the command then goes on as the new version's member (--no-run: it exits) (docs/replay.md)",
    )
    .option(
      "--no-run",
      "with --blue-green --execute: create the version and exit, for a deployment that runs the new version's member as a service of its own (`run --version N+1`); by default the command goes on as that member, as `run --projection P --version N+1` does, until SIGTERM/SIGINT",
    )
    .addOption(outputOption())
    .action(action(rebuildAction));
}

/**
 * Plans (and with `--execute` does) the rebuild of the projection and reports it; a blue/green
 * rebuild executed without `--no-run` then goes on as the new version's member ({@link runProjection}).
 */
async function rebuildAction(flags: RebuildFlags): Promise<void> {
  const runsAfter = goesOnRunning(flags);
  const setup = await configFrom(
    flags,
    {
      REPLAYABLE_PROJECTION: flags.projection,
      REPLAYABLE_GROUP_ID: flags.group,
      REPLAYABLE_TOPICS: flags.topic?.join(","),
      ...metricsServerEnv(flags),
    },
    { checkTables: true },
  );
  const { config } = setup;
  const { projection } = commandTarget(setup, { uses: ["group"] });
  if (runsAfter) loadWebConfig(config.metrics.webConfigFile); // its problems before anything changes
  if (projection.versioned === true && flags.blueGreen !== true)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `rebuild: projection ${projection.name} is versioned: rebuild it with --blue-green (its next version beside the live one), docs/replay.md "Blue/green rebuild"`,
    );
  const log = cliLogger(config);
  await checkDatabase(config.databaseUrl, flags.execute === true ? ["rebuild"] : [], projection.tables);
  const doIt = { execute: flags.execute === true, force: flags.force === true };
  const attributes = {
    "replayable.projection": projection.name,
    "messaging.consumer.group.name": config.groupId,
    "replayable.execute": doIt.execute,
    "replayable.force": doIt.force,
    "replayable.blue_green": flags.blueGreen === true,
  };
  const traced = { tracesExporter: config.tracesExporter, log };
  // The span ends before a blue/green member goes on running: that member traces its own transactions.
  const created = await inCommandSpan(traced, "rebuild", attributes, (_tracing, annotate) =>
    withCommandResources(async (open): Promise<number | undefined> => {
      const admin = await open.admin(config, log, {
        groupId: config.groupId,
        groupOperation: flags.execute === true ? "Read" : "Describe",
        topics: config.topics,
        topicOperations: [flags.execute === true ? "Read" : "Describe", "DescribeConfigs"],
      });
      const pool = open.pool(config, 2);
      const options = { admin, pool, projection, groupId: config.groupId, topics: config.topics, log };
      if (flags.blueGreen !== true) {
        const outcome = await rebuild({ ...options, ...doIt });
        annotate(outcomeAttributes(outcome));
        report(outcome, flags.output);
        return undefined;
      }
      const outcome = await blueGreenRebuild({ ...options, ...doIt });
      annotate({
        ...outcomeAttributes(outcome),
        "replayable.version": outcome.kind === "refused" ? undefined : outcome.plan.version,
      });
      reportBlueGreen(outcome, flags.output, runsAfter);
      return outcome.kind === "executed" && runsAfter ? outcome.plan.version : undefined;
    }),
  );
  // After the rebuild's own connections are closed.
  if (created !== undefined) await runCreated(setup, projection, created);
}

/**
 * Whether the command goes on as the new version's member: `--blue-green --execute` without
 * `--no-run`.
 * @throws ReplayableError CONFIG_INVALID for `--no-run` without `--blue-green --execute`.
 */
function goesOnRunning(flags: RebuildFlags): boolean {
  const blueGreenExecute = flags.blueGreen === true && flags.execute === true;
  if (!flags.run && !blueGreenExecute)
    throw new ReplayableError(
      "CONFIG_INVALID",
      "--no-run: only with --blue-green --execute (it keeps the command from going on as the new version's member); remove it",
    );
  const runs = blueGreenExecute && flags.run;
  if (!runs && (flags.metricsHost !== undefined || flags.metricsPort !== undefined))
    throw new ReplayableError(
      "CONFIG_INVALID",
      "--metrics-host/--metrics-port: only when the command goes on as the new version's member (--blue-green --execute without --no-run); remove them",
    );
  return runs;
}

/**
 * Goes on as version `version`'s member, exactly as `run --projection P --version N` would: same
 * config, metrics server, readiness, signals and exit codes.
 */
async function runCreated(setup: CliSetup, projection: RegisteredProjection, version: number): Promise<void> {
  const { config } = setup;
  createLogger(config.logLevel, { groupId: config.groupId }, stderrDestination(config.logFormat)).info(
    { projection: projection.name, version },
    `going on as version ${version}'s member (as \`run --projection ${projection.name} --version ${version}\`) until SIGTERM/SIGINT; --no-run creates the version and exits`,
  );
  await runProjection({ setup, projection, version, migrate: true });
}

function letters(n: string): string {
  return `${n} unresolved dead letter${n === "1" ? "" : "s"}`;
}

function report(outcome: RebuildOutcome, output: "table" | "json"): void {
  if (outcome.kind === "refused") {
    if (output === "json")
      printJson({ outcome: "refused", reason: outcome.reason, message: outcome.message });
    process.stderr.write(`replayable: rebuild refused, nothing changed: ${outcome.message}\n`);
    process.exitCode = 1;
    return;
  }
  const { plan } = outcome;
  if (output === "json") {
    printJson(
      outcome.kind === "executed"
        ? {
            outcome: "executed",
            rebuildId: outcome.rebuildId,
            emptied: outcome.emptied,
            deadLettersSuperseded: outcome.deadLettersSuperseded,
            ...plan,
          }
        : { outcome: "dry-run", ...plan },
    );
    return;
  }
  reportTable(outcome);
}

/** {@link report}'s table output of a dry run or an executed rebuild. */
function reportTable(outcome: Exclude<RebuildOutcome, { kind: "refused" }>): void {
  const { plan } = outcome;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(
    outcome.kind === "dry-run"
      ? `Dry run (nothing changed): rebuild of projection ${plan.projection} with group ${plan.groupId} (${plan.groupState})`
      : `Rebuilt projection ${plan.projection} (audit row ${outcome.rebuildId} in replayable.rebuilds): group ${plan.groupId} reset to the log start offsets`,
  );
  printTable(
    plan.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      logStartOffset: p.logStartOffset,
      highWatermark: p.highWatermark,
      committedOffset: p.committedOffset ?? "-",
      checkpoint: p.checkpoint ?? "-",
      newOffset: p.newOffset,
      records: p.records,
    })),
  );
  const tables = plan.tables
    .map((t) => `${t.table} (${t.rows} ${t.rows === "1" ? "row" : "rows"})`)
    .join(", ");
  if (outcome.kind === "dry-run") {
    out(
      `--execute would empty ${tables} and the dedupe state (${plan.checkpoints} checkpoints, ${plan.eventIds} event ids), after resetting the group, and resolve ${letters(plan.deadLetters)} of the records it hands back as superseded (the consumer reads those records again).`,
    );
    if (plan.refusal !== undefined)
      out(`--execute would be refused now (${plan.refusal.reason}):\n${plan.refusal.message}`);
  } else {
    out(
      `Emptied ${tables} and the dedupe state (${outcome.emptied.checkpoints} checkpoints, ${outcome.emptied.eventIds} event ids); ${letters(outcome.deadLettersSuperseded)} of the records it hands back resolved as superseded: the consumer reads those records again (\`dead-letters list --state resolved\`). Start \`replayable run\` to apply the log again.`,
    );
  }
  if (plan.missingTopics.length > 0)
    out(`Topics with checkpoints that no longer exist: ${plan.missingTopics.join(", ")}`);
  if (plan.compactedTopics.length > 0)
    out(
      `Compacted topics (only the latest record per key is kept): ${plan.compactedTopics.map((t) => `${t.topic} (cleanup.policy=${t.cleanupPolicy})`).join(", ")}`,
    );
}
