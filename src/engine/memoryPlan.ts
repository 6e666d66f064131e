/**
 * The memory budget (REPLAYABLE_MEMORY_BUDGET_BYTES) turned into the sizes that spend it: the fetch
 * size per partition (KafkaJS `maxBytesPerPartition`, Kafka's `max.partition.fetch.bytes`), the
 * size of a whole fetch response (`maxBytes`, Kafka's `fetch.max.bytes`), and the size of one
 * transaction. A pure function: the member calls it on every assignment and when the records it
 * sees change the estimate (docs/design.md "The memory budget").
 *
 * The rule:
 * - A member holds, per assigned partition, the batch being applied, with REPLAYABLE_PREFETCH one
 *   more fetched behind it, and one fetch in flight; and each transaction running (at most
 *   REPLAYABLE_PARTITIONS_CONCURRENTLY, at most one per partition) holds a copy of its records as
 *   statement parameters, of up to {@link transactionFetches} fetch sizes. So the budget is shared by
 *   `partitions × (held + 1) + min(partitions, concurrently) × transactionFetches` fetch sizes.
 * - A fetch of F wire bytes costs F × (1 + {@link NODE_BYTES_PER_RECORD} / bytes per record) in
 *   Node: KafkaJS's message objects, the Buffer views of keys, values and headers, and the
 *   engine's records come on top of the response buffer the views share.
 * - The fetch size per partition is capped at 1 MiB, the Java consumer's
 *   `max.partition.fetch.bytes` default, and at REPLAYABLE_MAX_BATCH_BYTES when the operator set it;
 *   it is at least {@link MIN_FETCH_BYTES}. The broker returns the first record batch of a fetch
 *   whole even when it is larger than either limit (KIP-74), so a large record is never stuck.
 * - A partition fetched below its decode floor (a replay below the cached checkpoint: KafkaJS
 *   patch 009 does not decode those record batches, and the engine holds only their offsets and
 *   counts) costs about its wire bytes, the response buffer, while the fetch is decoded: its fetch
 *   size is the budget's share per held batch without the Node overhead,
 *   `budget / (partitions × (held + 1))`, within the same caps.
 * - The fetch response is capped at the larger fetch size times the partitions (so it never binds
 *   before the per-partition sizes do) and at 50 MiB, Java's `fetch.max.bytes` default.
 * - A transaction applies a whole fetch, and with more partitions than transaction slots the
 *   partition's prefetched batch too when it arrived while the transaction waited for a slot
 *   (partitionWorker.ts, "absorbs"): its bytes bound is {@link transactionFetches} fetch sizes. It
 *   holds fewer records when they would take longer than {@link TRANSACTION_LATENCY_GOAL_MS} at the
 *   latency per record seen so far (never below {@link MIN_LATENCY_TRANSACTION_RECORDS} records for
 *   that reason), or more than REPLAYABLE_MAX_BATCH_RECORDS when the operator set it.
 */

/** Java's `max.partition.fetch.bytes` default (ConsumerConfig), the largest fetch size per partition, bytes. */
export const JAVA_MAX_PARTITION_FETCH_BYTES = 1_048_576;
/** Java's `fetch.max.bytes` default (ConsumerConfig), the largest fetch response, bytes. */
export const JAVA_FETCH_MAX_BYTES = 52_428_800;
/** The smallest fetch size per partition, bytes: below it a fetch round trip carries too little. */
export const MIN_FETCH_BYTES = 16_384;
/**
 * Node's memory per fetched record besides its wire bytes, bytes: measured on CloudEvents records
 * with four headers (the ledger's), KafkaJS 2.2.4 decoded and converted by toRecord, Node 20: 1,200
 * bytes of heap per record whatever the value size (200, 700 and 4,096-byte values;
 * bench/recordOverhead.ts).
 */
export const NODE_BYTES_PER_RECORD = 1200;
/** The record size assumed before any record was seen, bytes: small, so the first fetches stay small. */
export const ASSUMED_BYTES_PER_RECORD = 256;
/** The longest a transaction should take by the latency per record seen, ms. */
export const TRANSACTION_LATENCY_GOAL_MS = 1000;
/**
 * The fewest records the latency goal may bound a transaction to. A transaction's time is mostly
 * fixed per transaction on a busy machine (round trips, the checkpoint lock, COMMIT); read as time
 * per record, it shrank the next transactions, which made the fixed part weigh more: `make bench`
 * went down to about 24 records a transaction (700-byte records, 24 partitions). Below this floor
 * only REPLAYABLE_MAX_BATCH_RECORDS, when set, or the fetch itself bounds a transaction.
 */
export const MIN_LATENCY_TRANSACTION_RECORDS = 1000;
/** The most records of one transaction when nothing else bounds it (REPLAYABLE_MAX_BATCH_RECORDS's maximum). */
export const MAX_TRANSACTION_RECORDS = 100_000;

/** What the member has seen of its records; undefined before any. */
export interface ObservedRecords {
  /** Mean size of a record's key, value and headers, bytes. */
  readonly bytesPerRecord: number;
  /** Mean transaction time (BEGIN to COMMIT) per record, ms. */
  readonly msPerRecord: number | undefined;
}

/** The inputs of {@link planMemory}. */
export interface MemoryPlanInput {
  /** REPLAYABLE_MEMORY_BUDGET_BYTES, bytes. */
  readonly budgetBytes: number;
  /** Partitions assigned to the member (0 is planned as 1). */
  readonly assignedPartitions: number;
  /** REPLAYABLE_PREFETCH: one more batch held per partition. */
  readonly prefetch: boolean;
  /** REPLAYABLE_PARTITIONS_CONCURRENTLY: the most transactions running at once. */
  readonly concurrently: number;
  readonly observed: ObservedRecords | undefined;
  /** The operator's caps: REPLAYABLE_MAX_BATCH_BYTES and REPLAYABLE_MAX_BATCH_RECORDS when set. */
  readonly caps: { readonly maxBatchBytes?: number; readonly maxBatchRecords?: number };
}

/** What {@link planMemory} decides. Bytes are wire bytes of keys, values and headers. */
export interface MemoryPlan {
  /** KafkaJS `maxBytesPerPartition`, bytes. */
  readonly fetchBytesPerPartition: number;
  /** The fetch size of a partition fetched below its decode floor (KafkaJS patch 009), bytes; at least `fetchBytesPerPartition`. */
  readonly replayFetchBytesPerPartition: number;
  /** KafkaJS `maxBytes`: the whole fetch response, bytes. */
  readonly fetchMaxBytes: number;
  /** The most records of one transaction. */
  readonly transactionMaxRecords: number;
  /** The most bytes of one transaction. */
  readonly transactionMaxBytes: number;
}

/**
 * The fetch and transaction sizes that keep the member within its budget (the rule at the top of
 * this file).
 * @example planMemory({ budgetBytes: 64 << 20, assignedPartitions: 6, prefetch: true, concurrently: 8,
 *   observed: { bytesPerRecord: 4096, msPerRecord: 0.05 }, caps: {} }).fetchBytesPerPartition === 1_048_576
 */
export function planMemory(input: MemoryPlanInput): MemoryPlan {
  const partitions = Math.max(1, input.assignedPartitions);
  const held = (input.prefetch ? 2 : 1) + 1;
  const concurrently = Math.max(1, input.concurrently);
  const perTransaction = transactionFetches(partitions, concurrently, input.prefetch);
  const shares = partitions * held + Math.min(partitions, concurrently) * perTransaction;
  const bytesPerRecord = Math.max(1, input.observed?.bytesPerRecord ?? ASSUMED_BYTES_PER_RECORD);
  const nodeBytesPerWireByte = 1 + NODE_BYTES_PER_RECORD / bytesPerRecord;
  const fair = Math.floor(input.budgetBytes / (shares * nodeBytesPerWireByte));
  const cap = Math.min(JAVA_MAX_PARTITION_FETCH_BYTES, input.caps.maxBatchBytes ?? Infinity);
  // Whole KiB, so small changes of the estimate do not change the fetch size.
  const fetchBytesPerPartition = Math.max(
    Math.min(MIN_FETCH_BYTES, cap),
    Math.min(cap, Math.floor(fair / 1024) * 1024),
  );
  const replayFair = Math.floor(input.budgetBytes / (partitions * held));
  const replayFetchBytesPerPartition = Math.max(
    fetchBytesPerPartition,
    Math.min(cap, Math.floor(replayFair / 1024) * 1024),
  );
  const fetchMaxBytes = Math.min(JAVA_FETCH_MAX_BYTES, replayFetchBytesPerPartition * partitions);
  const msPerRecord = input.observed?.msPerRecord;
  const byLatency =
    msPerRecord === undefined || msPerRecord <= 0
      ? MAX_TRANSACTION_RECORDS
      : Math.max(MIN_LATENCY_TRANSACTION_RECORDS, Math.floor(TRANSACTION_LATENCY_GOAL_MS / msPerRecord));
  const transactionMaxRecords = Math.min(
    MAX_TRANSACTION_RECORDS,
    byLatency,
    input.caps.maxBatchRecords ?? Infinity,
  );
  const transactionMaxBytes = Math.min(
    fetchBytesPerPartition * perTransaction,
    input.caps.maxBatchBytes ?? Infinity,
  );
  return {
    fetchBytesPerPartition,
    replayFetchBytesPerPartition,
    fetchMaxBytes,
    transactionMaxRecords,
    transactionMaxBytes,
  };
}

/**
 * How many fetch sizes one transaction may hold: 2 when the partitions outnumber the transaction
 * slots and REPLAYABLE_PREFETCH is on (a partition's transactions then wait for a slot while its
 * next batch arrives, and one transaction applies both), else 1.
 */
export function transactionFetches(partitions: number, concurrently: number, prefetch: boolean): number {
  return prefetch && partitions > concurrently ? 2 : 1;
}
