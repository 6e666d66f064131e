/**
 * Prometheus metrics on a registry the caller owns (never prom-client's global default).
 * Every metric is listed in docs/metrics.md; names are snake_case with unit suffixes, counters
 * end in `_total`, labels stay low-cardinality (topic, partition, key kind, error code, reason,
 * result, projection: each a short, bounded list).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { RetryReason } from "../errors.js";

/** The metrics the engine and the consumer update. */
export interface Metrics {
  readonly registry: Registry;
  readonly duplicates: Counter<"topic" | "key">;
  readonly applied: Counter<"topic">;
  readonly deadLettered: Counter<"topic" | "code">;
  readonly batchDuration: Histogram<"topic">;
  readonly transactionDuration: Histogram<"topic">;
  readonly transactionRetries: Counter<"reason">;
  readonly offsetCommits: Counter<"result">;
  readonly lag: Gauge<"topic" | "partition">;
  readonly checkpoint: Gauge<"topic" | "partition">;
  readonly checkpointCommitGap: Gauge<"topic" | "partition">;
  readonly partitionStalled: Gauge<"topic" | "partition">;
  readonly rebalances: Counter;
  readonly assignedPartitions: Gauge;
  readonly eventIds: Gauge<"projection">;
  readonly pausedPartitions: Gauge;
  readonly dlqPublishes: Counter<"result">;
  readonly fetchBytesPerPartition: Gauge;
  readonly fetchMaxBytes: Gauge;
  readonly transactionMaxRecords: Gauge;
  readonly transactionMaxBytes: Gauge;
}

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Creates the metrics on a new registry (or `registry`), with Node process metrics
 * (prom-client's default metrics as `replayable_process_*`, `replayable_nodejs_*`) unless
 * `processMetrics` is false. docs/metrics.md lists them all.
 */
export function createMetrics(options: { registry?: Registry; processMetrics?: boolean } = {}): Metrics {
  const registry = options.registry ?? new Registry();
  if (options.processMetrics !== false) registerProcessMetrics(registry);
  const registers = [registry];
  return {
    registry,
    ...recordMetrics(registers),
    ...transactionMetrics(registers),
    ...partitionMetrics(registers),
    ...groupMetrics(registers),
    ...memoryPlanMetrics(registers),
  };
}

/** Node's process metrics (prom-client's default metrics) as `replayable_process_*` and `replayable_nodejs_*`. */
function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: "replayable_" });
  // Gauges named like counters (promtool: "non-counter metrics should not have _total suffix");
  // the same numbers are the sum of replayable_nodejs_active_{handles,requests,resources}{type}.
  for (const name of ["active_handles_total", "active_requests_total", "active_resources_total"]) {
    registry.removeSingleMetric(`replayable_nodejs_${name}`);
  }
}

/** The records: applied, duplicates by dedupe key, dead-lettered, and dead letters published. */
function recordMetrics(
  registers: Registry[],
): Pick<Metrics, "duplicates" | "applied" | "deadLettered" | "dlqPublishes"> {
  return {
    duplicates: new Counter({
      name: "replayable_duplicates_total",
      help: "Records whose dedupe key was already recorded for this projection: effect skipped.",
      labelNames: ["topic", "key"] as const,
      registers,
    }),
    applied: new Counter({
      name: "replayable_records_applied_total",
      help: "Records whose effect was applied and committed in PostgreSQL.",
      labelNames: ["topic"] as const,
      registers,
    }),
    deadLettered: new Counter({
      name: "replayable_records_dead_lettered_total",
      help: "Records that could not be applied and were stored in replayable.dead_letters, by error code.",
      labelNames: ["topic", "code"] as const,
      registers,
    }),
    dlqPublishes: new Counter({
      name: "replayable_dlq_publishes_total",
      help: "Dead letters published to REPLAYABLE_DLQ_TOPIC after COMMIT, by result (published, failed); the database row stays the source of truth.",
      labelNames: ["result"] as const,
      registers,
    }),
  };
}

/** The transactions and their offset commits: durations, retries, commit results. */
function transactionMetrics(
  registers: Registry[],
): Pick<Metrics, "batchDuration" | "transactionDuration" | "transactionRetries" | "offsetCommits"> {
  return {
    batchDuration: new Histogram({
      name: "replayable_batch_duration_seconds",
      help: "Time to process one transaction's worth of a partition's records: transaction, offset commit and heartbeat.",
      labelNames: ["topic"] as const,
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    transactionDuration: new Histogram({
      name: "replayable_transaction_duration_seconds",
      help: "Time from BEGIN to COMMIT of one dedupe-then-effect transaction that committed.",
      labelNames: ["topic"] as const,
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    transactionRetries: new Counter({
      name: "replayable_transaction_retries_total",
      help: "Transactions aborted by a transient failure and retried, by reason.",
      labelNames: ["reason"] as const,
      registers,
    }),
    offsetCommits: new Counter({
      name: "replayable_offset_commits_total",
      help: "Kafka offset commits after a database COMMIT, by result (committed, skipped_rebalanced, failed).",
      labelNames: ["result"] as const,
      registers,
    }),
  };
}

/** Each assigned partition: lag, checkpoint, its gap to the committed offset, stalls. */
function partitionMetrics(
  registers: Registry[],
): Pick<Metrics, "lag" | "checkpoint" | "checkpointCommitGap" | "partitionStalled"> {
  return {
    lag: new Gauge({
      name: "replayable_consumer_lag_records",
      help: "High watermark minus the next offset to process, per assigned partition.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    checkpoint: new Gauge({
      name: "replayable_checkpoint_offset",
      help: "The projection's checkpoint (next offset to apply) per assigned partition, as committed in PostgreSQL.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    checkpointCommitGap: new Gauge({
      name: "replayable_checkpoint_commit_gap_records",
      help: "Checkpoint minus the group's committed Kafka offset per assigned partition: records a restart would re-read as duplicates.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    partitionStalled: new Gauge({
      name: "replayable_partition_stalled",
      help: "1 for an assigned partition whose position has not moved for REPLAYABLE_STALL_TIMEOUT_MS while it has lag, else 0.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
  };
}

/** The member's group: rebalances, partitions assigned and paused, event ids recorded. */
function groupMetrics(
  registers: Registry[],
): Pick<Metrics, "rebalances" | "assignedPartitions" | "pausedPartitions" | "eventIds"> {
  return {
    rebalances: new Counter({
      name: "replayable_rebalances_total",
      help: "Times this member (re)joined the consumer group and received an assignment.",
      registers,
    }),
    assignedPartitions: new Gauge({
      name: "replayable_assigned_partitions",
      help: "Partitions currently assigned to this member.",
      registers,
    }),
    pausedPartitions: new Gauge({
      name: "replayable_paused_partitions",
      help: "Partitions paused because their transaction keeps failing transiently (e.g. PostgreSQL down); each resumes after its back-off.",
      registers,
    }),
    eventIds: new Gauge({
      name: "replayable_event_ids",
      help: "Rows in replayable.processed_events per projection: counted at start and every minute, plus this member's inserts since.",
      labelNames: ["projection"] as const,
      registers,
    }),
  };
}

/** The memory plan's sizes (docs/design.md "The memory budget"). */
function memoryPlanMetrics(
  registers: Registry[],
): Pick<
  Metrics,
  "fetchBytesPerPartition" | "fetchMaxBytes" | "transactionMaxRecords" | "transactionMaxBytes"
> {
  return {
    fetchBytesPerPartition: new Gauge({
      name: "replayable_fetch_bytes_per_partition",
      help: "The memory plan's fetch size per partition (KafkaJS maxBytesPerPartition), bytes: REPLAYABLE_MEMORY_BUDGET_BYTES shared by the assigned partitions.",
      registers,
    }),
    fetchMaxBytes: new Gauge({
      name: "replayable_fetch_max_bytes",
      help: "The memory plan's limit of a whole fetch response (KafkaJS maxBytes), bytes.",
      registers,
    }),
    transactionMaxRecords: new Gauge({
      name: "replayable_transaction_max_records",
      help: "The memory plan's most records in one transaction.",
      registers,
    }),
    transactionMaxBytes: new Gauge({
      name: "replayable_transaction_max_bytes",
      help: "The memory plan's most bytes (keys, values, headers) in one transaction.",
      registers,
    }),
  };
}

/** The `reason` label values of `replayable_transaction_retries_total`. */
const RETRY_REASONS: readonly RetryReason[] = [
  "serialization_failure",
  "deadlock",
  "lock_timeout",
  "connection",
  "unavailable",
  "other",
];

/** The `result` label values of `replayable_offset_commits_total`. */
const COMMIT_RESULTS = ["committed", "skipped_rebalanced", "failed"] as const;

/**
 * Creates the label sets a member will use with value 0, so `rate()` and `increase()` see the
 * first increment and dashboards show 0 rather than "no data" (Prometheus's instrumentation
 * practices, "Avoid missing metrics").
 * @param topics the topics the member consumes.
 */
export function initialiseMetrics(metrics: Metrics, topics: readonly string[]): void {
  for (const topic of topics) {
    metrics.applied.inc({ topic }, 0);
    metrics.duplicates.inc({ topic, key: "offset" }, 0);
    metrics.duplicates.inc({ topic, key: "event_id" }, 0);
  }
  for (const reason of RETRY_REASONS) metrics.transactionRetries.inc({ reason }, 0);
  for (const result of COMMIT_RESULTS) metrics.offsetCommits.inc({ result }, 0);
  metrics.assignedPartitions.set(0);
  metrics.pausedPartitions.set(0);
  for (const result of ["published", "failed"]) metrics.dlqPublishes.inc({ result }, 0);
}
