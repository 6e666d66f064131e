/**
 * A topic named to a command that does not exist on the cluster: a usage error naming the topic,
 * where its name came from and the fix, worded as `run` words it (`assertTopicsExist` in
 * src/kafka/admin.ts), so every command says it the same way and exits 2.
 */
import { ReplayableError } from "../errors.js";
import type { KafkaAdmin } from "../kafka/admin.js";

/**
 * The error for `missing` topics (at least one).
 * @param source where the names came from, e.g. `--topic or REPLAYABLE_TOPICS`.
 * @returns a ReplayableError CONFIG_INVALID (the CLI exits 2) with `context.missing`.
 */
export function missingTopicsError(missing: readonly string[], source: string): ReplayableError {
  const many = missing.length > 1;
  return new ReplayableError(
    "CONFIG_INVALID",
    `topic${many ? "s" : ""} ${missing.join(", ")} (${source}) ${many ? "do" : "does"} not exist on the cluster; create ${many ? "them" : "it"} first or correct the name`,
    { context: { missing: [...missing] } },
  );
}

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
