/**
 * `replay`: reset a consumer group's committed offsets as `kafka-consumer-groups --reset-offsets`
 * does (KIP-122), and say, from the projection's checkpoints, what running the consumer afterwards
 * will re-read as duplicates, apply for the first time, or skip for good (docs/design.md "Replay and
 * rebuild"). A dry run by default; `execute` refuses while the group has members.
 */
import type pg from "pg";
import { ReplayableError } from "../errors.js";
import type { GroupMember, ClusterAdmin } from "../kafka/admin.js";
import type { Logger } from "../logger.js";
import { projectionLockedMessage, withExclusiveProjectionLock } from "./exclusiveLock.js";
import { groupActiveMessage } from "./groupActivity.js";
import { readPartitionStates, type PartitionScope } from "./partitionStates.js";
import { planReset, planTotals, resetTimestamp, type PartitionPlan, type PlanTotals } from "./planReset.js";
import { describeResetSpec, type ResetSpec } from "./resetSpec.js";

/** Inputs of {@link replay}. */
export interface ReplayOptions {
  readonly admin: ClusterAdmin;
  readonly pool: pg.Pool;
  readonly groupId: string;
  /** Whose checkpoints the counts are measured against. */
  readonly projection: string;
  readonly scope: PartitionScope;
  /** Where `scope.topics` came from, for the error naming a topic that does not exist (default `--topic`). */
  readonly topicSource?: string | undefined;
  readonly spec: ResetSpec;
  /** Commit the new offsets; otherwise only plan (the default). */
  readonly execute: boolean;
  readonly log: Logger;
  /** The current time in ms, for `--by-duration`; default Date.now(). */
  readonly nowMs?: number;
}

/** A planned (or applied) reset. */
export interface ReplayPlan {
  readonly groupId: string;
  readonly projection: string;
  /** The reset as flags, e.g. `--to-offset 100`. */
  readonly reset: string;
  /** For time-based resets: the timestamp asked for, ISO-8601 UTC. */
  readonly timestamp?: string;
  readonly groupState: string;
  readonly members: readonly GroupMember[];
  readonly partitions: readonly PartitionPlan[];
  readonly totals: PlanTotals;
}

/** How a replay ended. A refusal changes nothing. */
export type ReplayOutcome =
  | { readonly kind: "dry-run"; readonly plan: ReplayPlan }
  | { readonly kind: "executed"; readonly plan: ReplayPlan }
  | {
      readonly kind: "refused";
      readonly reason: "GROUP_ACTIVE" | "PROJECTION_LOCKED";
      readonly message: string;
      readonly members: readonly GroupMember[];
    };

/**
 * Plans the reset and, with `execute`, commits it: under the projection's exclusive advisory lock
 * (no `run` of it can start meanwhile), only when the group is Empty, then reads the committed
 * offsets back to confirm.
 * @throws ReplayableError CONFIG_INVALID for bad flags, a topic that does not exist or a missing
 *   partition; NOT_FOUND for `--all-topics` on a group without committed offsets; KAFKA when the
 *   committed offsets read back differ from the plan.
 * @example
 * const outcome = await replay({ admin, pool, groupId: "ledger", projection: "ledger",
 *   scope: { allTopics: true }, spec: { kind: "to-earliest" }, execute: false, log });
 */
export async function replay(options: ReplayOptions): Promise<ReplayOutcome> {
  const { admin, pool, groupId, projection } = options;
  if (!options.execute) return { kind: "dry-run", plan: await planReplay(options) };

  const locked = await withExclusiveProjectionLock(pool, projection, async () => {
    const group = await admin.describeGroup(groupId);
    const active = groupActiveMessage(groupId, group.state, group.members, "reset its offsets");
    if (active !== undefined)
      return { kind: "refused", reason: "GROUP_ACTIVE", message: active, members: group.members } as const;
    const plan = await planReplay(options);
    await commitPlan(admin, groupId, plan.partitions, options.log);
    return { kind: "executed", plan } as const;
  });
  if (locked.locked) return locked.value;
  // A run of the projection holds its shared lock: name the group's members if it has joined.
  const group = await admin.describeGroup(groupId);
  const active = groupActiveMessage(groupId, group.state, group.members, "reset its offsets");
  return active !== undefined
    ? { kind: "refused", reason: "GROUP_ACTIVE", message: active, members: group.members }
    : {
        kind: "refused",
        reason: "PROJECTION_LOCKED",
        message: projectionLockedMessage(projection, `reset the offsets of group ${groupId}`),
        members: [],
      };
}

/** Reads the partitions' state and plans the reset; changes nothing. */
export async function planReplay(options: ReplayOptions): Promise<ReplayPlan> {
  const { admin, pool, groupId, projection, spec } = options;
  const timestampMs = resetTimestamp(spec, options.nowMs ?? Date.now());
  const states = await readPartitionStates(admin, pool, {
    groupId,
    projection,
    scope: options.scope,
    ...(options.topicSource === undefined ? {} : { topicSource: options.topicSource }),
    ...(timestampMs === undefined ? {} : { timestampMs }),
  });
  const partitions = planReset(spec, states);
  const group = await admin.describeGroup(groupId);
  return {
    groupId,
    projection,
    reset: describeResetSpec(spec),
    ...(timestampMs === undefined ? {} : { timestamp: new Date(timestampMs).toISOString() }),
    groupState: group.state,
    members: group.members,
    partitions,
    totals: planTotals(partitions),
  };
}

/**
 * Commits the planned offsets topic by topic, then reads them back.
 * @throws ReplayableError KAFKA when a commit fails or the offsets read back differ.
 */
export async function commitPlan(
  admin: ClusterAdmin,
  groupId: string,
  partitions: readonly Pick<PartitionPlan, "topic" | "partition" | "newOffset">[],
  log: Logger,
): Promise<void> {
  const topics = [...new Set(partitions.map((p) => p.topic))];
  for (const topic of topics) {
    const offsets = partitions
      .filter((p) => p.topic === topic)
      .map((p) => ({ partition: p.partition, offset: p.newOffset }));
    try {
      await admin.setOffsets(groupId, topic, offsets);
    } catch (error) {
      throw new ReplayableError(
        "KAFKA",
        `committing the new offsets of ${topic} for group ${groupId} failed: ${error instanceof Error ? error.message : String(error)}${topics.indexOf(topic) > 0 ? ` (the topics before it were reset: ${topics.slice(0, topics.indexOf(topic)).join(", ")})` : ""}`,
        { cause: error, context: { groupId, topic } },
      );
    }
    log.info({ groupId, topic, offsets }, "committed offsets reset");
  }
  const readBack = await admin.committedOffsets(groupId, topics);
  const wrong = partitions.filter(
    (p) => readBack.find((c) => c.topic === p.topic && c.partition === p.partition)?.offset !== p.newOffset,
  );
  if (wrong.length > 0) {
    throw new ReplayableError(
      "KAFKA",
      `group ${groupId}: the committed offsets read back differ from the reset for ${wrong.map((p) => `${p.topic}:${p.partition}`).join(", ")}; did a member join meanwhile? Check with \`replayable status\``,
      { context: { groupId } },
    );
  }
}
