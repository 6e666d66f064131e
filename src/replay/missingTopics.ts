/**
 * Which topics named to a command are not on the cluster; the error is {@link missingTopicsError}
 * (src/kafka/missingTopicsError.ts), worded once for `run` and every command.
 */
import type { ReplayableError } from "../errors.js";
import type { ClusterAdmin } from "../kafka/admin.js";
import { missingTopicsError } from "../kafka/missingTopicsError.js";

/**
 * Those of `topics` the cluster does not have (one Metadata request for every topic: KafkaJS's
 * per-topic requests log "This server does not host this topic-partition" at error level and retry).
 */
export async function topicsNotOnCluster(admin: ClusterAdmin, topics: readonly string[]): Promise<string[]> {
  if (topics.length === 0) return [];
  const existing = new Set(await admin.listTopics());
  return topics.filter((t) => !existing.has(t));
}

/**
 * Checks that every topic of `topics` exists.
 * @param source where the names came from, for the message.
 * @throws ReplayableError CONFIG_INVALID ({@link missingTopicsError}) naming the missing ones.
 */
export async function assertTopicsOnCluster(
  admin: ClusterAdmin,
  topics: readonly string[],
  source: string,
): Promise<void> {
  const missing = await topicsNotOnCluster(admin, topics);
  if (missing.length > 0) throw missingTopicsError(missing, source);
}

/**
 * `status`'s warning for a topic it found (in the projection's checkpoints, the group's committed
 * offsets, or the topics the projection's members consumed, `replayable.projection_topics`) that the
 * cluster does not list: deleted, or, when Kafka refused this principal Describe on it (`refusal`,
 * from topicsRefusingDescribe in src/kafka/accessCheck.ts), hidden by a missing ACL.
 */
export function goneTopicWarning(
  topic: string,
  foundIn: "checkpoints" | "committed offsets" | "consumed",
  refusal?: ReplayableError,
): string {
  const found =
    foundIn === "checkpoints"
      ? "the projection has checkpoints for it"
      : foundIn === "committed offsets"
        ? "the group has committed offsets for it"
        : "the projection's members consumed it";
  return refusal === undefined
    ? `topic ${topic}: ${found}, but it no longer exists on the cluster`
    : `topic ${topic}: ${found}, but the cluster does not list it to this principal: ${refusal.message}`;
}
