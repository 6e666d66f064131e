/**
 * The fetch sizes per partition the raw KafkaJS scenarios use: replayable's own (so `raw` differs
 * from the replayable scenarios only by its handler) and Java's default (so a ratio is never
 * flattered by a slow ceiling).
 */
import type { Config } from "../src/config.js";
import { planMemory } from "../src/engine/memoryPlan.js";
import type { OutgoingRecord } from "../src/projections/ledger/generate.js";

/**
 * `max.partition.fetch.bytes` of the Java consumer by default, 1 MiB (Kafka consumer configuration,
 * "max.partition.fetch.bytes": 1048576): the fetch size per partition of scenario `raw-1mib`.
 */
export const JAVA_DEFAULT_FETCH_BYTES_PER_PARTITION = 1024 * 1024;

/**
 * The fetch size per partition, bytes, that a replayable member with `config` plans for a topic of
 * `partitions` partitions whose records hold `bytesPerRecord` bytes of keys, values and headers
 * (KafkaJS maxBytesPerPartition: src/engine/memoryPlan.ts, from REPLAYABLE_MEMORY_BUDGET_BYTES, once
 * it has seen records). The one place the benchmark derives it.
 */
export function ownFetchBytesPerPartition(
  config: Config,
  partitions: number,
  bytesPerRecord: number,
): number {
  return planMemory({
    budgetBytes: config.memoryBudgetBytes,
    assignedPartitions: partitions,
    prefetch: config.prefetch,
    concurrently: config.partitionsConsumedConcurrently,
    observed: { bytesPerRecord, msPerRecord: undefined },
    caps: { maxBatchBytes: config.maxBatchBytes, maxBatchRecords: config.maxBatchRecords },
  }).fetchBytesPerPartition;
}

/** Mean bytes of a record's key, value and headers (names and values), as the engine counts them (recordBytes). */
export function meanRecordBytes(records: readonly OutgoingRecord[]): number {
  let bytes = 0;
  for (const r of records) {
    bytes += Buffer.byteLength(r.key) + Buffer.byteLength(r.value);
    for (const [name, value] of Object.entries(r.headers)) bytes += name.length + Buffer.byteLength(value);
  }
  return records.length === 0 ? 1 : bytes / records.length;
}
