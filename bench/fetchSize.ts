/**
 * The fetch sizes per partition the raw KafkaJS scenarios use: replayable's own (so `raw` differs
 * from the replayable scenarios only by its handler) and Java's default (so a ratio is never
 * flattered by a slow ceiling).
 */
import type { Config } from "../src/config.js";

/**
 * `max.partition.fetch.bytes` of the Java consumer by default, 1 MiB (Kafka consumer configuration,
 * "max.partition.fetch.bytes": 1048576): the fetch size per partition of scenario `raw-1mib`.
 */
export const JAVA_DEFAULT_FETCH_BYTES_PER_PARTITION = 1024 * 1024;

/**
 * The fetch size per partition, bytes, that a replayable member with `config` uses on a topic of
 * `partitions` partitions (KafkaJS maxBytesPerPartition, as src/engine/consumerService.ts sets it):
 * today `config.maxBatchBytes`, whatever the partition count. The one place the benchmark derives
 * it; change it with the member's rule.
 */
export function ownFetchBytesPerPartition(config: Config, partitions: number): number {
  void partitions;
  return config.maxBatchBytes;
}
