/** `replayable status`: per partition, the committed offset, the checkpoint, the high watermark and the lag. */
import { Command } from "commander";
import type pg from "pg";
import type { Config } from "../../config.js";
import { checkDatabase } from "../../db/startupCheck.js";
import type { ClusterAdmin } from "../../kafka/admin.js";
import { committedOffsetOrNone, compareOffsets, offsetDistance } from "../../offsets.js";
import type { Projection } from "../../projection.js";
import { missingTopicsError } from "../../kafka/missingTopicsError.js";
import { goneTopicWarning, topicsNotOnCluster } from "../../replay/missingTopics.js";
import { topicsRefusingDescribe } from "../../kafka/accessCheck.js";
import { createLogger } from "../../logger.js";
import { resolveProjectionTopics } from "../../replay/projectionTopics.js";
import { readCheckpoints } from "../../sql/readCheckpoints.js";
import { selectVersions, type VersionRow } from "../../sql/projectionVersions.js";
import { resolveVersion } from "../../versions/resolveVersion.js";
import { versionedInstance } from "../../versions/versionNames.js";
import { readVersionStart } from "../../sql/versionStart.js";
import { versionProgress, type VersionProgress } from "../../versions/versionProgress.js";
import { terminalSafe } from "../../text/terminalText.js";
import { commandTarget } from "../commandTarget.js";
import {
  action,
  outputOption,
  cliLogger,
  configFrom,
  printJson,
  printTable,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { withCommandResources } from "../commandResources.js";

interface StatusFlags extends ConnectionFlags {
  projection?: string;
  topic?: string[];
  group?: string;
  output: string;
}

/**
 * One partition's state as `status` reports it. Offsets are strings; null where none (the table
 * shows "-").
 */
export interface PartitionStatus {
  topic: string;
  partition: number;
  logStartOffset: string;
  highWatermark: string;
  committedOffset: string | null;
  checkpoint: string | null;
  /**
   * High watermark minus where the next run starts reading: the committed offset, or the log
   * start offset when nothing is committed or the committed offset is outside the log (above the
   * high watermark, or below the log start offset).
   */
  lag: string;
}

/**
 * One partition's row, and a warning when the committed offset is outside the log: above the high
 * watermark (the topic was recreated or truncated, or an offset was set by hand), or below the log
 * start offset (the records between were deleted, by retention or DeleteRecords, KIP-107, before
 * the group read them); and when the projection's checkpoint is below the log start offset (records
 * it never applied were deleted: e.g. the group's offsets expired while no member ran). The client then gets OFFSET_OUT_OF_RANGE and resets to
 * `auto.offset.reset` (the log start offset, `fromBeginning`), so the lag counts from there.
 * @param committed the committed offset as read; negative or absent means none ({@link committedOffsetOrNone}).
 * @param groupId the consumer group whose committed offset it is, for the warning.
 */
export function partitionStatus(
  topic: string,
  offsets: { partition: number; logStartOffset: string; highWatermark: string },
  committed: string | undefined,
  checkpoint: string | undefined,
  groupId: string,
): { row: PartitionStatus; warning?: string } {
  const c = committedOffsetOrNone(committed);
  const ahead = c !== null && compareOffsets(c, offsets.highWatermark) > 0;
  const deleted = c !== null && compareOffsets(c, offsets.logStartOffset) < 0;
  const from = c === null || ahead || deleted ? offsets.logStartOffset : c;
  const row = {
    topic,
    partition: offsets.partition,
    logStartOffset: offsets.logStartOffset,
    highWatermark: offsets.highWatermark,
    committedOffset: c,
    checkpoint: checkpoint ?? null,
    lag: offsetDistance(offsets.highWatermark, from).toString(),
  };
  if (deleted) {
    const last = (BigInt(offsets.logStartOffset) - 1n).toString();
    return {
      row,
      warning: `${topic}:${offsets.partition}: the committed offset ${c} is below the log start offset ${offsets.logStartOffset}: records ${c} to ${last} were deleted (retention or DeleteRecords) before group ${groupId} read them, and the projection never applies them; the next run gets OFFSET_OUT_OF_RANGE and starts at the log start offset, so the lag counts from there. A full \`replayable rebuild\` cannot bring them back either.`,
    };
  }
  if (checkpoint !== undefined && !ahead && compareOffsets(checkpoint, offsets.logStartOffset) < 0) {
    const last = (BigInt(offsets.logStartOffset) - 1n).toString();
    const group = c === null ? `group ${groupId} has no committed offset` : `group ${groupId} committed ${c}`;
    return {
      row,
      warning: `${topic}:${offsets.partition}: the checkpoint ${checkpoint} is below the log start offset ${offsets.logStartOffset}: records ${checkpoint} to ${last} were deleted (retention or DeleteRecords) before the projection applied them, and it never applies them (${group}; expired offsets, offsets.retention.minutes, look like this). The next run starts at the log start offset. A full \`replayable rebuild\` cannot bring them back either.`,
    };
  }
  if (!ahead) return { row };
  return {
    row,
    warning: `${topic}:${offsets.partition}: the committed offset ${c} is above the high watermark ${offsets.highWatermark} (the topic was recreated or truncated, or the offset was set by hand); the next run gets OFFSET_OUT_OF_RANGE and starts again from the log start offset ${offsets.logStartOffset}, so the lag counts from there. Check with \`replayable replay --to-earliest\` (a dry run) before running.`,
  };
}

/** A row as the table shows it: "-" where JSON has null. */
function tableRow(row: PartitionStatus): Record<string, string | number> {
  return { ...row, committedOffset: row.committedOffset ?? "-", checkpoint: row.checkpoint ?? "-" };
}

/** Builds the `status` command. */
export function statusCommand(): Command {
  return withConnectionOptions(new Command("status"))
    .description(
      "show per partition: log start offset, high watermark, committed offset, checkpoint and lag; for a versioned projection, every version side by side with its records done since it started and the ETA to catch up",
    )
    .option(
      "--projection <name>",
      "projection whose checkpoints to show (env REPLAYABLE_PROJECTION; default: the projection named like --group, else the config file's only projection)",
    )
    .option(
      "--topic <topic...>",
      "topics (default: those the group has committed offsets for or the projection has checkpoints for, else the projection's default topics)",
    )
    .option("--group <id>", "consumer group id (env REPLAYABLE_GROUP_ID; default: the projection name)")
    .addOption(outputOption())
    .action(action(statusAction));
}

/** Prints, per partition of the projection's topics, the offsets, the checkpoint and the lag. */
async function statusAction(flags: StatusFlags): Promise<void> {
  const setup = await configFrom(flags, {
    REPLAYABLE_PROJECTION: flags.projection,
    REPLAYABLE_TOPICS: flags.topic?.join(","),
    REPLAYABLE_GROUP_ID: flags.group,
  });
  const { config } = setup;
  const { projection } = commandTarget(setup, { group: flags.group, uses: ["group"] });
  const log = cliLogger(config);
  await checkDatabase(config.databaseUrl, []);
  await withCommandResources(async (open) => {
    const admin = await open.admin(config, log, {
      groupId: config.groupId,
      groupOperation: "Describe",
      topics: config.topics,
      topicOperations: ["Describe"],
    });
    const pool = open.pool(config, 1);
    if (projection.versioned === true) {
      await printVersionsStatus(admin, pool, projection, config, flags.output);
      return;
    }
    const { rows, warnings } = await readPartitionStatus(admin, pool, projection, config);
    if (flags.output === "json")
      printJson({ groupId: config.groupId, projection: projection.name, partitions: rows, warnings });
    else {
      process.stdout.write(`group ${config.groupId}, projection ${projection.name}\n`);
      printTable(rows.map(tableRow));
      for (const warning of warnings) process.stdout.write(`WARNING: ${terminalSafe(warning)}\n`);
    }
  });
}

/**
 * A versioned projection's status: every version that is not dropped, side by side (its state,
 * group and, per partition, its offsets, checkpoint and lag), then per version its progress:
 * records done since it started, lag, average rate since it was created and the ETA
 * ({@link versionProgress}); docs/replay.md "Progress".
 */
async function printVersionsStatus(
  admin: ClusterAdmin,
  pool: pg.Pool,
  projection: Projection<unknown>,
  config: Config,
  output: string,
): Promise<void> {
  const versions = [];
  for (const row of await versionsToShow(pool, projection)) {
    const instance = versionedInstance(projection, row.version);
    const { gone, ...status } = await readPartitionStatus(admin, pool, instance, {
      ...config,
      groupId: row.groupId,
    });
    const measured = await progressOf(pool, projection.name, row.version, status.rows);
    const progress = { ...measured, eta: shownEta(measured.eta, gone) };
    versions.push({ version: row.version, state: row.state, groupId: row.groupId, progress, ...status });
  }
  if (output === "json") {
    printJson({ projection: projection.name, versions });
    return;
  }
  process.stdout.write(`projection ${projection.name} (versioned)\n`);
  printTable(
    versions.flatMap((v) =>
      v.rows.map((r) => ({ version: v.version, state: v.state, group: v.groupId, ...tableRow(r) })),
    ),
  );
  process.stdout.write("\n");
  printTable(
    versions.map((v) => ({
      version: v.version,
      state: v.state,
      recordsDone: v.progress.recordsDone,
      lag: v.progress.lag,
      recordsPerSecond: v.progress.recordsPerSecond,
      eta: v.progress.eta,
    })),
  );
  for (const v of versions)
    for (const w of v.warnings) process.stdout.write(`WARNING: version ${v.version}: ${terminalSafe(w)}\n`);
}

/**
 * A version's ETA as `status` shows it: a lag of 0 is "caught up" only on the topics that still
 * exist when some of its topics were deleted (their records cannot be read any more; the WARNING
 * lines name them). Pure; exported for its unit test.
 */
export function shownEta(eta: string, goneTopics: readonly string[]): string {
  return eta === "caught up" && goneTopics.length > 0 ? "caught up on the topics that exist" : eta;
}

/**
 * The versions `status` shows: those not dropped, by version.
 * @throws ReplayableError CONFIG_INVALID with {@link resolveVersion}'s hint when there is none: a
 *   versioned projection that has no version yet (`replayable migrate --projection P` makes
 *   version 1), or whose versions were all dropped.
 */
export async function versionsToShow(
  pool: pg.Pool | pg.ClientBase,
  projection: Projection<unknown>,
): Promise<VersionRow[]> {
  const rows = (await selectVersions(pool, projection.name)).filter((r) => r.state !== "dropped");
  // With no version shown, resolveVersion has no live version to find: it throws its hint.
  if (rows.length === 0) await resolveVersion(pool, projection);
  return rows;
}

/**
 * A version's progress from its status rows: each partition's start offset is the one its group
 * was set to at creation (the `create` audit row), else (version 1, a partition added since) the
 * log start offset now; the rate is over the time since the registry's `created_at`.
 */
async function progressOf(
  pool: pg.Pool,
  projection: string,
  version: number,
  rows: readonly PartitionStatus[],
): Promise<VersionProgress> {
  const start = await readVersionStart(pool, projection, version);
  const startOf = (r: PartitionStatus) =>
    start?.offsets.find((o) => o.topic === r.topic && o.partition === r.partition)?.offset ??
    r.logStartOffset;
  const now = start?.nowMs ?? Date.now();
  return versionProgress(
    rows.map((r) => ({ startOffset: startOf(r), checkpoint: r.checkpoint, lag: r.lag })),
    start?.createdAtMs ?? now,
    now,
  );
}

/**
 * Every partition's {@link PartitionStatus} of the topics `status` shows, and the warnings: topics
 * found in the group's offsets or the checkpoints but deleted since (also listed as `gone`),
 * committed offsets outside the log ({@link partitionStatus}).
 * @throws ReplayableError when a topic named or defaulted does not exist (a usage error).
 */
async function readPartitionStatus(
  admin: ClusterAdmin,
  pool: pg.Pool,
  projection: Pick<Projection<unknown>, "name" | "defaultTopics">,
  config: Config,
): Promise<{ rows: PartitionStatus[]; warnings: string[]; gone: string[] }> {
  const resolved = await resolveProjectionTopics(admin, pool, projection, config.groupId, config.topics);
  const rows: PartitionStatus[] = [];
  const warnings: string[] = [];
  const checkpoints = await readCheckpoints(pool, projection.name);
  // A topic named (or defaulted) that does not exist is a usage error; one found in the
  // group's offsets or the checkpoints was deleted since: a warning, the rest is shown.
  const gone = await topicsNotOnCluster(admin, resolved.topics);
  if (gone.length > 0 && resolved.source !== "found") throw missingTopicsError(gone, resolved.label);
  const refused = await topicsRefusingDescribe(
    {
      brokers: config.kafka.brokers,
      security: config.kafka.security,
      clientId: `${config.kafka.clientId}-cli`,
      log: createLogger("silent"),
    },
    gone,
  );
  const committedGone =
    gone.length === 0 ? [] : (await admin.groupCommittedOffsets(config.groupId)).map((c) => c.topic);
  for (const topic of gone) {
    const foundIn = checkpoints.some((c) => c.topic === topic)
      ? "checkpoints"
      : committedGone.includes(topic)
        ? "committed offsets"
        : "consumed";
    warnings.push(goneTopicWarning(topic, foundIn, refused.get(topic)));
  }
  const topics = resolved.topics.filter((t) => !gone.includes(t));
  const committed = topics.length === 0 ? [] : await admin.committedOffsets(config.groupId, topics);
  for (const topic of topics) {
    for (const p of await admin.topicOffsets(topic)) {
      const { row, warning } = partitionStatus(
        topic,
        p,
        committed.find((x) => x.topic === topic && x.partition === p.partition)?.offset,
        checkpoints.find((x) => x.topic === topic && x.partition === p.partition)?.nextOffset,
        config.groupId,
      );
      rows.push(row);
      if (warning !== undefined) warnings.push(warning);
    }
  }
  return { rows, warnings, gone };
}
