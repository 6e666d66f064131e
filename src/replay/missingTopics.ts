/**
 * Which topics named to a command are not on the cluster; the error is {@link missingTopicsError}
 * (src/kafka/missingTopicsError.ts), worded once for `run` and every command.
 */
import type { KafkaAdmin } from "../kafka/admin.js";
import { missingTopicsError } from "../kafka/missingTopicsError.js";

/**
 * Those of `topics` the cluster does not have (one Metadata request for every topic: KafkaJS's
 * per-topic requests log "This server does not host this topic-partition" at error level and retry).
 */
export async function topicsNotOnCluster(admin: KafkaAdmin, topics: readonly string[]): Promise<string[]> {
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
  admin: KafkaAdmin,
  topics: readonly string[],
  source: string,
): Promise<void> {
  const missing = await topicsNotOnCluster(admin, topics);
  if (missing.length > 0) throw missingTopicsError(missing, source);
}
