/**
 * A partition of a topic, and the one key format every per-partition map uses (the member's
 * workers, the Kafka feed's commits and pauses, the lag monitor's rows).
 */

/** One partition of one topic. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** A member's assignment after a group join: topic → partition numbers. */
export type Assignment = Readonly<Record<string, readonly number[]>>;

/** `topic/partition`, made only by {@link partitionKey}. */
export type PartitionKey = string & { readonly __brand: "PartitionKey" };

/**
 * The map key of a partition. A topic name cannot contain "/" (Kafka's legal characters are
 * a-z A-Z 0-9 . _ -), so the key is unambiguous.
 */
export function partitionKey(topic: string, partition: number): PartitionKey {
  return `${topic}/${partition}` as PartitionKey;
}

/** The partition a {@link partitionKey} names. */
export function topicPartitionOf(key: PartitionKey): TopicPartition {
  const at = key.lastIndexOf("/");
  return { topic: key.slice(0, at), partition: Number(key.slice(at + 1)) };
}
