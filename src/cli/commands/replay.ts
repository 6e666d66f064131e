/**
 * `replayable replay`: reset a consumer group's committed offsets, with the options of
 * `kafka-consumer-groups --reset-offsets` (KIP-122), and show from the projection's checkpoints
 * what the next `run` re-reads as duplicates, applies for the first time, or skips for good.
 */
import { Command } from "commander";
import { checkDatabase } from "../../db/startupCheck.js";
import type { KafkaClient } from "../../config.js";
import { ReplayableError } from "../../errors.js";
import type { PartitionPlan } from "../../replay/planReset.js";
import { replay, type ReplayOutcome, type ReplayPlan } from "../../replay/replay.js";
import { parseResetSpec, type ResetFlags } from "../../replay/resetSpec.js";
import { parseTopicArgs } from "../../replay/topicPartitions.js";
import {
  action,
  outputOption,
  cliLogger,
  configFrom,
  printJson,
  printTable,
  withConnectionOptions,
  type ConnectionFlags,
  type SettingSource,
} from "../common.js";
import { withCommandResources } from "../commandResources.js";
import { inCommandSpan, outcomeAttributes } from "../../tracing/tracing.js";
import { commandTarget } from "../commandTarget.js";
import {
  resolveVersionTarget,
  versionLine,
  versionTargetOption,
  type VersionTarget,
} from "../versionTarget.js";

interface ReplayFlags extends ConnectionFlags, ResetFlags {
  group?: string;
  topic?: string[];
  allTopics?: boolean;
  execute?: boolean;
  dryRun?: boolean;
  output: "table" | "json";
  projection?: string;
  version?: string;
}

/** Builds the `replay` command. */
export function replayCommand(): Command {
  return withConnectionOptions(new Command("replay"))
    .description(
      "reset a consumer group's committed offsets as `kafka-consumer-groups --reset-offsets` does, and show what the next run re-reads as duplicates, applies, or skips; a dry run unless --execute",
    )
    .option(
      "--group <id>",
      "consumer group whose committed offsets to reset (env REPLAYABLE_GROUP_ID; default: the projection's name; of a versioned projection: the group its versions were created from, or the version's own)",
    )
    .option(
      "--topic <topic...>",
      "topics to reset: T (all partitions) or T:p,q (some); repeatable (env REPLAYABLE_TOPICS; default: the projection's topics)",
    )
    .option("--all-topics", "every topic the group has committed offsets for")
    .option("--to-earliest", "reset to the log start offset")
    .option("--to-latest", "reset to the high watermark (skips everything not yet applied)")
    .option("--to-current", "reset to the committed offset (the high watermark where none)")
    .option("--to-offset <n>", "reset to offset n, clamped to [log start offset, high watermark]")
    .option("--shift-by <n>", "move the committed offset by n (negative: back), clamped likewise")
    .option(
      "--to-datetime <t>",
      "reset to the first record at or after YYYY-MM-DDTHH:mm:SS[.sss][Z|±hh:mm] (no zone: UTC)",
    )
    .option("--by-duration <d>", "reset to the first record at or after now minus PnDTnHnMnS, e.g. PT30M")
    .option("--execute", "commit the new offsets (refused while the group has members)")
    .option("--dry-run", "only show the plan (the default)")
    .addOption(outputOption())
    .option(
      "--projection <name>",
      "projection whose checkpoints the counts use (env REPLAYABLE_PROJECTION; default: the group id when it names a projection)",
    )
    .addOption(versionTargetOption())
    .action(action(replayAction));
}

/** Checks the flags, then plans (and with `--execute` commits) the offset reset and reports it. */
async function replayAction(flags: ReplayFlags): Promise<void> {
  if (flags.execute && flags.dryRun)
    throw new ReplayableError("CONFIG_INVALID", "--execute and --dry-run exclude each other; give one");
  if (flags.topic !== undefined && flags.allTopics)
    throw new ReplayableError(
      "CONFIG_INVALID",
      "give either --topic T[:p,q] (repeatable) or --all-topics (every topic the group has committed offsets for), not both",
    );
  const spec = parseResetSpec(flags);
  const setup = await configFrom(flags, {
    REPLAYABLE_PROJECTION: flags.projection,
    REPLAYABLE_GROUP_ID: flags.group,
  });
  const { config } = setup;
  const uses =
    flags.topic === undefined && !flags.allTopics ? (["group", "topics"] as const) : (["group"] as const);
  const chosen = commandTarget(setup, { group: flags.group, uses });
  const registered = chosen.projection;
  const scope = flags.allTopics
    ? { allTopics: true as const }
    : { topics: parseTopicArgs(flags.topic ?? chosen.topics) };
  const group = flags.group ?? (process.env.REPLAYABLE_GROUP_ID || undefined);
  const log = cliLogger(config);
  await checkDatabase(config.databaseUrl, []);
  const attributes = {
    "replayable.projection": registered.name,
    "replayable.execute": flags.execute === true,
    "replayable.reset": spec.kind,
  };
  const traced = { tracesExporter: config.tracesExporter, log };
  await inCommandSpan(traced, "replay", attributes, (_tracing, annotate) =>
    withCommandResources(async (open) => {
      const pool = open.pool(config, 2);
      const target = await resolveVersionTarget(pool, registered, flags.version, group, chosen.groupId);
      const admin = await open.admin(config, log, {
        groupId: target.groupId,
        groupOperation: flags.execute === true ? "Read" : "Describe",
        topics: scope.topics?.map((t) => t.topic) ?? [],
        topicOperations: [flags.execute === true ? "Read" : "Describe"],
      });
      const outcome = await replay({
        admin,
        pool,
        groupId: target.groupId,
        projection: target.projection.name,
        scope,
        topicSource: topicSource(flags.topic === undefined ? setup.sources.topics : "named", registered.name),
        spec,
        execute: flags.execute === true,
        log,
      });
      annotate({ ...outcomeAttributes(outcome), "messaging.consumer.group.name": target.groupId });
      report(outcome, flags.output, target, config.kafka.client);
    }),
  );
}

function report(
  outcome: ReplayOutcome,
  output: "table" | "json",
  target: VersionTarget,
  client: KafkaClient,
): void {
  const version = target.version?.number;
  if (outcome.kind === "refused") {
    if (output === "json")
      printJson({
        outcome: "refused",
        ...(version === undefined ? {} : { version }),
        reason: outcome.reason,
        message: outcome.message,
        members: outcome.members,
      });
    process.stderr.write(`replayable: replay refused, nothing changed: ${outcome.message}\n`);
    process.exitCode = 1;
    return;
  }
  const { plan } = outcome;
  if (output === "json") {
    printJson({ outcome: outcome.kind, ...(version === undefined ? {} : { version }), ...plan });
    return;
  }
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const line = versionLine(target);
  if (line !== undefined) out(line);
  out(
    outcome.kind === "dry-run"
      ? `Dry run (nothing changed): ${plan.reset} for group ${plan.groupId} (${plan.groupState}), checkpoints of projection ${plan.projection}`
      : `Reset the committed offsets of group ${plan.groupId}: ${plan.reset}, checkpoints of projection ${plan.projection}`,
  );
  if (plan.timestamp !== undefined) out(`Timestamp: ${plan.timestamp}`);
  printTable(plan.partitions.map(row));
  for (const line of replayNotes(plan)) out(line);
  const t = plan.totals;
  out(
    `${outcome.kind === "dry-run" ? "After --execute, the next" : "The next"} \`replayable run\` re-reads ${t.duplicates} records as duplicates (effects skipped), applies ${t.firstApplies} for the first time, and skips ${t.skipped} for good. Counts are offset distances: upper bounds when offsets have gaps.`,
  );
  if (outcome.kind === "dry-run") out(executeHint(plan, client));
}

/**
 * The dry run's last line. KafkaJS's DescribeGroups reports a KIP-848 group as Dead, members and
 * all (README, Limits); a Dead group with committed offsets is what such a group looks like, so
 * the line says so instead of inviting --execute.
 */
function executeHint(plan: ReplayPlan, client: KafkaClient): string {
  if (plan.members.length > 0)
    return `The group has ${plan.members.length} active member(s): --execute is refused until they stop.`;
  if (
    client === "kafkajs" &&
    plan.groupState === "Dead" &&
    plan.partitions.some((p) => p.committedOffset !== null)
  )
    return `Group ${plan.groupId} is Dead to KafkaJS yet has committed offsets: a KIP-848 group's members are seen only with KAFKA_CLIENT=platformatic; check with it before --execute (README, Limits).`;
  return "Add --execute to commit the new offsets.";
}

function row(p: PartitionPlan): Record<string, string | number> {
  return {
    topic: p.topic,
    partition: p.partition,
    logStartOffset: p.logStartOffset,
    highWatermark: p.highWatermark,
    committedOffset: p.committedOffset ?? "-",
    checkpoint: p.checkpoint ?? "-",
    newOffset: p.newOffset,
    duplicates: p.duplicates,
    firstApplies: p.firstApplies,
    skipped: p.skipped,
  };
}

/**
 * The lines `replay` prints under its plan: an offset moved into [log start offset, high
 * watermark], records a forward reset will never apply, a committed offset or a checkpoint above
 * the high watermark. Pure; exported for its unit test.
 */
export function replayNotes(plan: Pick<ReplayPlan, "partitions">): string[] {
  const lines: string[] = [];
  for (const p of plan.partitions) {
    const where = `${p.topic}:${p.partition}`;
    if (p.requestedOffset !== undefined)
      lines.push(
        `note: ${where}: offset ${p.requestedOffset} is outside [${p.logStartOffset}, ${p.highWatermark}] (log start offset, high watermark); using ${p.newOffset}, as Kafka does`,
      );
    if (p.skipped !== "0")
      lines.push(
        p.checkpoint === null
          ? `WARNING: ${where}: the new offset ${p.newOffset} is past the log start offset ${p.logStartOffset} and the projection has no checkpoint here (it applied nothing): up to ${p.skipped} records before it will never be applied`
          : `WARNING: ${where}: the new offset ${p.newOffset} is past the checkpoint ${p.checkpoint}: up to ${p.skipped} records before it will never be applied`,
      );
    if (p.committedAheadOfLog)
      lines.push(
        `WARNING: ${where}: the committed offset ${p.committedOffset} is above the high watermark ${p.highWatermark} (the topic was recreated or truncated, or the offset was set by hand): a run from it gets OFFSET_OUT_OF_RANGE and starts again from the log start offset ${p.logStartOffset}`,
      );
    if (p.checkpointAheadOfLog)
      lines.push(
        `WARNING: ${where}: the checkpoint ${p.checkpoint} is above the high watermark ${p.highWatermark}: the topic was recreated or truncated, and \`run\` will refuse it; see \`replayable rebuild\``,
      );
  }
  return lines;
}

/**
 * Where the topics of a replay without --all-topics came from, for the error naming one that does
 * not exist: a topic the operator did not name is the config file's or the projection's own.
 */
function topicSource(source: SettingSource, projection: string): string {
  if (source === "named") return "--topic or REPLAYABLE_TOPICS";
  const whose =
    source === "file" ? "the config file's topics" : `the default topics of projection ${projection}`;
  return `${whose}; name others with --topic, or use --all-topics`;
}
