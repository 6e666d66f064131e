/**
 * How far a version is behind the log: per partition of its topics, the high watermark minus its
 * checkpoint (the log start offset where it has applied nothing yet). Offsets are exact bigints.
 */
import type pg from "pg";
import type { ClusterAdmin } from "../kafka/admin.js";
import { offsetDistance } from "../offsets.js";
import type { Projection } from "../projection.js";
import { readPartitionStates } from "../replay/partitionStates.js";
import { resolveProjectionTopics } from "../replay/projectionTopics.js";

/** One partition's lag of a version; offsets and lag are decimal strings. */
export interface VersionPartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly logStartOffset: string;
  readonly highWatermark: string;
  /** The version's checkpoint; null when it has applied nothing there. */
  readonly checkpoint: string | null;
  readonly lag: string;
}

/**
 * The lag of `instance` (a version's engine projection) on every partition of its topics: `topics`,
 * else its group's committed and its checkpointed topics, else its default topics. `topicSource`
 * names where `topics` came from in the error about a missing one (default: --topic).
 * @throws ReplayableError CONFIG_INVALID for a topic that does not exist.
 */
export async function versionLag(
  admin: ClusterAdmin,
  db: pg.Pool,
  instance: Pick<Projection<unknown>, "name" | "defaultTopics">,
  groupId: string,
  topics: readonly string[],
  topicSource?: string,
): Promise<VersionPartitionLag[]> {
  const resolved = await resolveProjectionTopics(admin, db, instance, groupId, topics);
  const states = await readPartitionStates(admin, db, {
    groupId,
    projection: instance.name,
    scope: { topics: resolved.topics.map((topic) => ({ topic })) },
    topicSource: resolved.source === "named" ? (topicSource ?? resolved.label) : resolved.label,
  });
  return states.map((s) => {
    const from = s.checkpoint ?? s.logStartOffset;
    const lag = BigInt(from) >= BigInt(s.highWatermark) ? 0n : offsetDistance(s.highWatermark, from);
    return {
      topic: s.topic,
      partition: s.partition,
      logStartOffset: s.logStartOffset,
      highWatermark: s.highWatermark,
      checkpoint: s.checkpoint,
      lag: lag.toString(),
    };
  });
}
