/**
 * `rebuild`: recompute a projection from the log (docs/design.md "Replay and rebuild"). With the group
 * inactive and the projection's exclusive advisory lock held: Kafka first (the group's committed
 * offsets go to the log start offset of every partition of the projection's topics), then one
 * PostgreSQL transaction empties the derived tables and the dedupe state, writes an audit row, and
 * resolves as `superseded` the unresolved dead letters of the records it hands back to the consumer
 * (docs/design.md "Dead letters and rebuilds").
 * If the database step fails, the group merely re-reads everything as duplicates. Refused when a
 * partition's log start offset is above 0 (its history is gone) or a topic is compacted
 * (`cleanup.policy` holds `compact`: only the latest record per key is kept), unless forced.
 */
import { hostname, userInfo } from "node:os";
import type pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { ReplayableError, errorMessage } from "../errors.js";
import { failpoint } from "../support/failpoints.js";
import type { GroupMember, ClusterAdmin } from "../kafka/admin.js";
import type { Logger } from "../logger.js";
import { offsetDistance, type OffsetString } from "../offsets.js";
import type { Projection } from "../projection.js";
import { countDedupeState, countTableRows } from "../sql/countRows.js";
import { emptyProjection, type EmptiedProjection } from "../sql/emptyProjection.js";
import { insertRebuild } from "../sql/insertRebuild.js";
import {
  countDeadLettersHandedBack,
  supersedeDeadLetters,
  type HandedBack,
} from "../sql/supersedeDeadLetters.js";
import { missingTopicsError } from "../kafka/missingTopicsError.js";
import { topicsNotOnCluster } from "./missingTopics.js";
import { resolveProjectionTopics } from "./projectionTopics.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";
import { projectionLockedMessage, withExclusiveProjectionLock } from "./exclusiveLock.js";
import { groupActiveMessage } from "./groupActivity.js";
import { readPartitionStates } from "./partitionStates.js";
import type { PartitionState } from "./planReset.js";
import { commitPlan } from "./replay.js";

/** Inputs of {@link rebuild}. */
export interface RebuildOptions {
  readonly admin: ClusterAdmin;
  readonly pool: pg.Pool;
  readonly projection: Pick<Projection<unknown>, "name" | "tables" | "defaultTopics">;
  readonly groupId: string;
  /**
   * The projection's topics; empty means the group's committed topics and the projection's
   * checkpointed topics (see projectionTopics.ts). Topics it has checkpoints for are always added.
   */
  readonly topics: readonly string[];
  readonly execute: boolean;
  /** Rebuild even though history is gone (a log start offset above 0, a topic deleted or compacted). */
  readonly force: boolean;
  readonly log: Logger;
}

/** One partition of a rebuild: reset from its committed offset to its log start offset. */
export interface RebuildPartition extends PartitionState {
  readonly newOffset: OffsetString;
  /** Records the consumer will apply again: high watermark - log start offset (an upper bound). */
  readonly records: string;
}

/** Why a rebuild is (or would be) refused. */
export type RebuildRefusalReason =
  "GROUP_ACTIVE" | "PROJECTION_LOCKED" | "HISTORY_DELETED" | "HISTORY_COMPACTED" | "GROUP_HAS_NO_OFFSETS";

/** A topic whose `cleanup.policy` includes `compact`. */
export interface CompactedTopic {
  readonly topic: string;
  /** As the broker reports it, e.g. `compact` or `compact,delete`. */
  readonly cleanupPolicy: string;
}

/** What a rebuild does, or would do. */
export interface RebuildPlan {
  readonly projection: string;
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly partitions: readonly RebuildPartition[];
  /** Topics the projection has checkpoints for that no longer exist in Kafka. */
  readonly missingTopics: readonly string[];
  /** Topics whose log is compacted: the rebuild would read only the latest record per key. */
  readonly compactedTopics: readonly CompactedTopic[];
  readonly tables: readonly { table: string; rows: string }[];
  readonly checkpoints: string;
  readonly eventIds: string;
  /**
   * Unresolved dead letters of records the rebuild hands back to the consumer (at or past a
   * partition's new offset): resolved as `superseded` by `execute`. Letters of records below a new
   * offset (gone) or of topics gone stay unresolved.
   */
  readonly deadLetters: string;
  readonly groupState: string;
  readonly members: readonly GroupMember[];
  readonly forced: boolean;
  /** In a dry run: why `--execute` would be refused now. */
  readonly refusal?: { readonly reason: RebuildRefusalReason; readonly message: string };
}

/** How a rebuild ended. A refusal changes nothing. */
export type RebuildOutcome =
  | { readonly kind: "dry-run"; readonly plan: RebuildPlan }
  | {
      readonly kind: "executed";
      readonly plan: RebuildPlan;
      readonly rebuildId: string;
      readonly emptied: EmptiedProjection;
      /** Dead letters resolved as `superseded`. */
      readonly deadLettersSuperseded: string;
    }
  | { readonly kind: "refused"; readonly reason: RebuildRefusalReason; readonly message: string };

/**
 * Plans the rebuild and, with `execute`, runs it (Kafka first, then one database transaction).
 * @throws ReplayableError CONFIG_INVALID for a named (or default) topic that does not exist; KAFKA when resetting the
 *   group fails (the database is untouched); DATABASE when the transaction fails after the group was
 *   reset (the dedupe state is intact, so the next run only counts duplicates: run `rebuild` again).
 */
export async function rebuild(options: RebuildOptions): Promise<RebuildOutcome> {
  const { admin, pool, projection, groupId } = options;
  if (!options.execute) {
    const plan = await planRebuild(options, pool);
    const probe = await withExclusiveProjectionLock(pool, projection.name, () => Promise.resolve());
    const refusal =
      activeRefusal(plan) ??
      (probe.locked
        ? undefined
        : {
            reason: "PROJECTION_LOCKED" as const,
            message: projectionLockedMessage(projection.name, "rebuild"),
          }) ??
      historyRefusal(plan, options.force) ??
      groupRefusal(plan, options.force);
    return { kind: "dry-run", plan: refusal === undefined ? plan : { ...plan, refusal } };
  }

  const locked = await withExclusiveProjectionLock(
    pool,
    projection.name,
    async (client): Promise<RebuildOutcome> => {
      await failpoint("rebuild-locked");
      const plan = await planRebuild(options, client);
      const refusal =
        activeRefusal(plan) ?? historyRefusal(plan, options.force) ?? groupRefusal(plan, options.force);
      if (refusal !== undefined) return { kind: "refused", ...refusal };
      // Kafka first: if the database step fails, the group only re-reads duplicates.
      await commitPlan(admin, groupId, plan.partitions, options.log);
      options.log.info({ groupId, projection: projection.name }, "group reset to the log start offsets");
      return emptyInOneTransaction(options, client, plan);
    },
  );
  if (locked.locked) return locked.value;
  const group = await admin.describeGroup(groupId);
  const active = groupActiveMessage(groupId, group.state, group.members, `rebuild ${projection.name}`);
  return active !== undefined
    ? { kind: "refused", reason: "GROUP_ACTIVE", message: active }
    : {
        kind: "refused",
        reason: "PROJECTION_LOCKED",
        message: projectionLockedMessage(projection.name, "rebuild"),
      };
}

/**
 * The database step of an executed rebuild, in one transaction: empty the projection, record the
 * rebuild (its id is the projection's new rebuild epoch, docs/design.md), resolve the dead letters
 * it hands back as `superseded`. Call it on `client` holding the projection's exclusive advisory lock.
 * @throws ReplayableError DATABASE when the transaction fails (the group is already reset).
 */
export async function emptyInOneTransaction(
  options: Pick<RebuildOptions, "projection" | "groupId" | "force" | "log">,
  client: pg.PoolClient,
  plan: RebuildPlan,
): Promise<RebuildOutcome> {
  const { projection, groupId } = options;
  try {
    return await withTransaction(
      client,
      async (): Promise<RebuildOutcome> => {
        const emptied = await emptyProjection(client, projection.name, projection.tables);
        const rebuildId = await insertRebuild(client, {
          projection: projection.name,
          groupId,
          osUser: osUser(),
          host: hostname(),
          forced: options.force,
          offsets: auditOffsets(plan),
        });
        // After the DELETE of the checkpoints, which waited for any transaction still holding one:
        // this statement's snapshot sees every dead letter written before.
        const deadLettersSuperseded = await supersedeDeadLetters(
          client,
          projection.name,
          handedBack(plan),
          `${osUser()}@${hostname()} (rebuild ${rebuildId})`,
        );
        return { kind: "executed", plan, rebuildId, emptied, deadLettersSuperseded };
      },
      { log: options.log },
    );
  } catch (error) {
    throw new ReplayableError(
      "DATABASE",
      `rebuild of ${projection.name}: group ${groupId} was reset to the log start offsets, but emptying the projection failed (${errorMessage(error)}); the database is unchanged, so running the consumer now only re-reads records as duplicates. Fix the cause and run \`replayable rebuild --execute\` again.`,
      { cause: error, context: { projection: projection.name, groupId } },
    );
  }
}

/** Reads what the rebuild would reset and empty; changes nothing. */
export async function planRebuild(
  options: Pick<RebuildOptions, "admin" | "projection" | "groupId" | "topics" | "force">,
  db: pg.Pool | pg.ClientBase,
): Promise<RebuildPlan> {
  const { admin, projection, groupId } = options;
  const resolved = await resolveProjectionTopics(admin, db, projection, groupId, options.topics);
  const checkpointTopics = [...new Set((await readCheckpoints(db, projection.name)).map((c) => c.topic))];
  const absent = await topicsNotOnCluster(admin, [...new Set([...resolved.topics, ...checkpointTopics])]);
  // A topic named (or defaulted) that does not exist is a usage error. One with checkpoints that
  // was deleted since is history gone (refused unless --force); one found only in the group's
  // committed offsets has nothing to reset.
  const unknown = resolved.topics.filter((t) => absent.includes(t) && !checkpointTopics.includes(t));
  if (resolved.source !== "found" && unknown.length > 0) throw missingTopicsError(unknown, resolved.label);
  const missingTopics = checkpointTopics.filter((t) => absent.includes(t));
  const topics = [...new Set([...resolved.topics, ...checkpointTopics])].filter((t) => !absent.includes(t));
  const states = await readPartitionStates(admin, db, {
    groupId,
    projection: projection.name,
    scope: { topics: topics.map((topic) => ({ topic })) },
    topicSource: resolved.label,
  });
  const group = await admin.describeGroup(groupId);
  const dedupe = await countDedupeState(db, projection.name);
  const partitions = states.map((s) => ({
    ...s,
    newOffset: s.logStartOffset,
    records: offsetDistance(s.highWatermark, s.logStartOffset).toString(),
  }));
  const policies = await admin.cleanupPolicies(topics);
  const compactedTopics = [...policies]
    .filter(([, policy]) => isCompacted(policy))
    .map(([topic, cleanupPolicy]) => ({ topic, cleanupPolicy }))
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0));
  return {
    projection: projection.name,
    groupId,
    topics: topics.sort(),
    partitions,
    missingTopics,
    compactedTopics,
    tables: await countTableRows(db, projection.tables),
    checkpoints: dedupe.checkpoints,
    eventIds: dedupe.eventIds,
    deadLetters: await countDeadLettersHandedBack(db, projection.name, handedBack({ partitions })),
    groupState: group.state,
    members: group.members,
    forced: options.force,
  };
}

/**
 * True when a `cleanup.policy` value compacts the log: `compact`, or `compact,delete` / `delete,compact`
 * (Kafka topic configs, "cleanup.policy": a list of `delete` and `compact`).
 */
export function isCompacted(cleanupPolicy: string): boolean {
  return cleanupPolicy
    .split(",")
    .map((p) => p.trim().toLowerCase())
    .includes("compact");
}

/**
 * The refusal for lost history: a partition whose log start offset is above 0, a topic with
 * checkpoints that no longer exists, or a compacted topic (the log cleaner keeps only the latest
 * record per key, Kafka documentation "Log Compaction", so the records a projection applied are
 * not all there to read again: one that adds records up, like the ledger's balances, would come out
 * different). A rebuild would silently lose what those records did, so only `force` allows it.
 * Undefined when nothing is lost or `force` is set. The reason is HISTORY_DELETED when records
 * were deleted, else HISTORY_COMPACTED.
 */
export function historyRefusal(
  plan: Pick<RebuildPlan, "projection" | "partitions" | "missingTopics" | "compactedTopics">,
  force: boolean,
): { reason: "HISTORY_DELETED" | "HISTORY_COMPACTED"; message: string } | undefined {
  if (force) return undefined;
  const truncated = plan.partitions.filter((p) => BigInt(p.logStartOffset) > 0n);
  const deleted = truncated.length > 0 || plan.missingTopics.length > 0;
  if (!deleted && plan.compactedTopics.length === 0) return undefined;
  const lines = [
    ...truncated.map(
      (p) =>
        `  ${p.topic}:${p.partition} log start offset ${p.logStartOffset}: records 0 to ${BigInt(p.logStartOffset) - 1n} were deleted (retention or deleteRecords)`,
    ),
    ...plan.missingTopics.map((t) => `  topic ${t} has checkpoints but no longer exists`),
    ...plan.compactedTopics.map(
      (t) =>
        `  topic ${t.topic} has cleanup.policy=${t.cleanupPolicy}: compaction keeps only the latest record per key, so earlier records of a key may be gone, and a projection that adds records up (balances, counters) would be recomputed to a different state (one whose state is the latest record of each key, such as an upsert sink in upsert mode with deleteOnTombstone and no dead letters, comes out the same: --force)`,
    ),
  ];
  return {
    reason: deleted ? "HISTORY_DELETED" : "HISTORY_COMPACTED",
    message: [
      `cannot rebuild ${plan.projection}: history is gone, and a rebuild would silently lose what those records did:`,
      ...lines,
      `Keep the projection as it is, or run again with --force to rebuild from what is left.`,
    ].join("\n"),
  };
}

/**
 * The refusal for a group that did not apply the projection, or not all of it: the projection has
 * checkpoints on a topic, and the group has no committed offset on any partition of that topic that
 * has one. A rebuild resets only the named group's offsets, so when another group applied those
 * records (a mistyped `--group`, the default group while the members run with their own, or a
 * projection fed by two groups, each with its own topics) that group's members would go on from
 * where they are and leave the emptied projection without those records. Counted per topic, not per
 * partition: a member that stopped between a partition's first transaction and its first offset
 * commit leaves one partition with a checkpoint and no committed offset, while a group subscribes
 * whole topics; such a stop on a topic's only checkpointed partitions, or offsets Kafka expired for
 * a topic the group no longer subscribes (KIP-211), is refused too, and the message names those
 * causes beside another group's (`--force` when the group is the one that consumes the topic). Partitions whose checkpoint is above the high watermark (a recreated topic, which the
 * rebuild exists for) are not counted. Undefined when the group has a committed offset on every such
 * topic, the projection has no such checkpoints (a new group of a new projection or version), or
 * `force` is set (the group's offsets expired, Kafka's `offsets.retention.minutes`, or were deleted
 * with a recreated topic, or it is the group that consumes from now on).
 */
export function groupRefusal(
  plan: Pick<RebuildPlan, "projection" | "groupId" | "partitions">,
  force: boolean,
): { reason: "GROUP_HAS_NO_OFFSETS"; message: string } | undefined {
  if (force) return undefined;
  // A checkpoint above the high watermark is of a deleted and recreated (or truncated) topic, whose
  // committed offsets Kafka deleted with it: no sign of another group.
  const checkpointed = plan.partitions.filter(
    (p) => p.checkpoint !== null && BigInt(p.checkpoint) <= BigInt(p.highWatermark),
  );
  const committedTopics = new Set(checkpointed.filter((p) => p.committedOffset !== null).map((p) => p.topic));
  const foreign = checkpointed.filter((p) => !committedTopics.has(p.topic));
  if (foreign.length === 0) return undefined;
  const shown = foreign
    .slice(0, 5)
    .map((p) => `${p.topic}:${p.partition} (checkpoint ${p.checkpoint})`)
    .join(", ");
  const more = foreign.length > 5 ? ` and ${foreign.length - 5} more` : "";
  const topics = [...new Set(foreign.map((p) => p.topic))];
  const where =
    committedTopics.size === 0
      ? "on any partition the projection has checkpoints for"
      : `on ${topics.length === 1 ? "topic" : "topics"} ${topics.join(", ")}, where the projection has checkpoints`;
  if (committedTopics.size === 0)
    return {
      reason: "GROUP_HAS_NO_OFFSETS",
      message: [
        `cannot rebuild ${plan.projection} with group ${plan.groupId}: the group has no committed offset ${where} (${shown}${more}), so another group applied those records.`,
        `A rebuild resets only ${plan.groupId}'s offsets: the members of the group that applied them would go on from where they are and leave the emptied projection without them.`,
        `Name the group the projection's members run with (--group), or run again with --force if ${plan.groupId} is the group that consumes the projection from now on (or its offsets expired, offsets.retention.minutes, or were deleted with a recreated topic).`,
      ].join("\n"),
    };
  // The group applied the projection's other topics: these may be another group's, or its own.
  const named = topics.join(", ");
  return {
    reason: "GROUP_HAS_NO_OFFSETS",
    message: [
      `cannot rebuild ${plan.projection} with group ${plan.groupId}: the group has no committed offset ${where} (${shown}${more}).`,
      `Either another group applied those records (a projection fed by two groups: a rebuild resets only ${plan.groupId}'s offsets, and that group's members would go on from where they are and leave the emptied projection without them), or ${plan.groupId} did and has no offset there now: a member stopped before its first offset commit on ${named}, or the group no longer consumes ${named} and Kafka expired those offsets (KIP-211, offsets.retention.minutes).`,
      `Rebuild with the other group too (--group), or run again with --force if ${plan.groupId} is the group that consumes ${named} from now on.`,
    ].join("\n"),
  };
}

/** Where the rebuild makes the consumer read each partition again: its new offset. */
function handedBack(plan: Pick<RebuildPlan, "partitions">): HandedBack[] {
  return plan.partitions.map((p) => ({ topic: p.topic, partition: p.partition, fromOffset: p.newOffset }));
}

/** The offsets recorded in the audit row: per partition, from (committed) and to (log start). */
export function auditOffsets(plan: Pick<RebuildPlan, "partitions" | "missingTopics">): unknown {
  return {
    partitions: plan.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      from: p.committedOffset,
      to: p.newOffset,
      checkpoint: p.checkpoint,
      logStartOffset: p.logStartOffset,
      highWatermark: p.highWatermark,
    })),
    missingTopics: plan.missingTopics,
  };
}

function activeRefusal(plan: RebuildPlan): { reason: "GROUP_ACTIVE"; message: string } | undefined {
  const message = groupActiveMessage(
    plan.groupId,
    plan.groupState,
    plan.members,
    `rebuild ${plan.projection}`,
  );
  return message === undefined ? undefined : { reason: "GROUP_ACTIVE", message };
}

/** The OS user running the command, for the audit row. */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.LOGNAME ?? "unknown";
  }
}
