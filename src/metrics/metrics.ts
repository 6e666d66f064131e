/**
 * Prometheus metrics on a registry the caller owns (never prom-client's global default).
 * Every metric is listed in the README's "Metrics" table; names are snake_case with unit
 * suffixes, counters end in `_total`, labels stay low-cardinality (topic, partition, key kind, code).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** The kinds of dedupe key a duplicate was recognised by (label `key`). */
export type DuplicateKeyKind = "offset" | "event_id";

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
  readonly rebalances: Counter;
  readonly assignedPartitions: Gauge;
  readonly eventIds: Gauge<"projection">;
}

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Creates the metrics on a new registry (or `registry`), with Node process metrics
 * (`replayable_process_*`, `replayable_nodejs_*`) unless `processMetrics` is false.
 */
export function createMetrics(options: { registry?: Registry; processMetrics?: boolean } = {}): Metrics {
  const registry = options.registry ?? new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: "replayable_" });
  const registers = [registry];
  return {
    registry,
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
    batchDuration: new Histogram({
      name: "replayable_batch_duration_seconds",
      help: "Time to process one partition's batch: transaction plus offset commit.",
      labelNames: ["topic"] as const,
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    transactionDuration: new Histogram({
      name: "replayable_transaction_duration_seconds",
      help: "Time from BEGIN to COMMIT of one dedupe-then-effect transaction.",
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
    lag: new Gauge({
      name: "replayable_consumer_lag_records",
      help: "High watermark minus the next offset to process, per assigned partition.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    checkpoint: new Gauge({
      name: "replayable_checkpoint_offset",
      help: "The projection's checkpoint (next offset to apply) per partition, as last committed.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    checkpointCommitGap: new Gauge({
      name: "replayable_checkpoint_commit_gap_records",
      help: "Checkpoint minus the committed Kafka offset per partition: records a restart would re-read as duplicates.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
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
    eventIds: new Gauge({
      name: "replayable_event_ids",
      help: "Rows in replayable.processed_events per projection (set at start and on each scrape interval).",
      labelNames: ["projection"] as const,
      registers,
    }),
  };
}
