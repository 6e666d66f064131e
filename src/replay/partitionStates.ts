/**
 * Gathers what `replay` and `rebuild` plan from: per partition the log start offset and high
 * watermark (Kafka ListOffsets), the group's committed offset (OffsetFetch) and the projection's
 * checkpoint (PostgreSQL).
 */
import type pg from "pg";
import { ReplayableError } from "../errors.js";
import type { ClusterAdmin } from "../kafka/admin.js";
import { committedOffsetOrNone } from "../offsets.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";
import { assertTopicsOnCluster } from "./missingTopics.js";
import type { PartitionState } from "./planReset.js";
import type { TopicArg } from "./topicPartitions.js";

/** Which partitions to read: named topics (and partitions), or all the group has committed offsets for. */
export type PartitionScope = { readonly allTopics: true } | { readonly topics: readonly TopicArg[] };

/**
 * Reads the state of each partition in `scope`, sorted by topic and partition.
 * @param timestampMs when set, also the offset of the first record at or after it (the high
 *   watermark when none), for `--to-datetime` / `--by-duration`.
 * @param topicSource where the names of `scope.topics` came from, for the error naming a topic
 *   that does not exist (default `--topic`).
 * @throws ReplayableError CONFIG_INVALID for a topic that does not exist (naming it and
 *   `topicSource`) or a partition the topic does not have; NOT_FOUND for `--all-topics` on a group
 *   without committed offsets.
 */
export async function readPartitionStates(
  admin: ClusterAdmin,
  db: pg.Pool | pg.ClientBase,
  options: {
    groupId: string;
    projection: string;
    scope: PartitionScope;
    timestampMs?: number;
    topicSource?: string;
  },
): Promise<PartitionState[]> {
  const { groupId, projection, scope } = options;
  const wanted = "allTopics" in scope ? await committedTopics(admin, groupId) : [...scope.topics];
  await assertTopicsOnCluster(
    admin,
    wanted.map((w) => w.topic),
    "allTopics" in scope
      ? `--all-topics: group ${groupId} has committed offsets for it`
      : (options.topicSource ?? "--topic"),
  );

  const checkpoints = await readCheckpoints(db, projection);
  const states: PartitionState[] = [];
  for (const { topic, partitions } of wanted) {
    const offsets = await admin.topicOffsets(topic);
    const chosen = partitions ?? offsets.map((o) => o.partition);
    const missing = chosen.filter((p) => !offsets.some((o) => o.partition === p));
    if (missing.length > 0) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--topic: topic ${topic} has partitions 0 to ${offsets.length - 1}, not ${missing.join(", ")}`,
      );
    }
    const committed = await admin.committedOffsets(groupId, [topic]);
    const byTimestamp =
      options.timestampMs === undefined ? [] : await admin.offsetsForTimestamp(topic, options.timestampMs);
    for (const partition of chosen) {
      const o = offsets.find((x) => x.partition === partition)!;
      const c = committed.find((x) => x.partition === partition)?.offset;
      const ts = byTimestamp.find((x) => x.partition === partition)?.offset;
      states.push({
        topic,
        partition,
        logStartOffset: o.logStartOffset,
        highWatermark: o.highWatermark,
        committedOffset: committedOffsetOrNone(c),
        checkpoint:
          checkpoints.find((k) => k.topic === topic && k.partition === partition)?.nextOffset ?? null,
        ...(options.timestampMs === undefined ? {} : { timestampOffset: ts ?? o.highWatermark }),
      });
    }
  }
  return states.sort((a, b) =>
    a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
  );
}

/**
 * The topics and partitions the group has committed offsets for (`--all-topics`).
 * @throws ReplayableError NOT_FOUND when it has none.
 */
async function committedTopics(admin: ClusterAdmin, groupId: string): Promise<TopicArg[]> {
  const committed = await admin.groupCommittedOffsets(groupId);
  if (committed.length === 0) {
    throw new ReplayableError(
      "NOT_FOUND",
      `--all-topics: consumer group ${groupId} has no committed offsets; name the topics with --topic T[:p,q]`,
    );
  }
  const byTopic = new Map<string, number[]>();
  for (const c of committed) byTopic.set(c.topic, [...(byTopic.get(c.topic) ?? []), c.partition]);
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}
