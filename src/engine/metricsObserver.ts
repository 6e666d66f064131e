/**
 * The member's metrics, from its events: the one place where a member event becomes a Prometheus
 * metric (docs/metrics.md lists them). The lag and checkpoint gauges are the LagMonitor's,
 * the event-id gauge the EventIdGauge's.
 */
import type { Metrics } from "../metrics/metrics.js";
import { partitionKey, type PartitionKey } from "../topicPartition.js";
import type { MemberEvents, TransactionCommitted } from "./memberEvents.js";

/** Updates `metrics` on every event of `events` from now on. */
export function observeMetrics(events: MemberEvents, metrics: Metrics): void {
  const paused = new Set<PartitionKey>();
  events
    .on("assigned", () => metrics.rebalances.inc())
    .on("batchCommitted", (event) => countCommitted(metrics, event))
    .on("retried", (event) => metrics.transactionRetries.inc({ reason: event.reason }))
    .on("paused", ({ topic, partition }) => {
      paused.add(partitionKey(topic, partition));
      metrics.pausedPartitions.set(paused.size);
    })
    .on("resumed", ({ topic, partition }) => {
      paused.delete(partitionKey(topic, partition));
      metrics.pausedPartitions.set(paused.size);
    })
    .on("memoryPlanned", (plan) => {
      metrics.fetchBytesPerPartition.set(plan.fetchBytesPerPartition);
      metrics.fetchMaxBytes.set(plan.fetchMaxBytes);
      metrics.transactionMaxRecords.set(plan.transactionMaxRecords);
      metrics.transactionMaxBytes.set(plan.transactionMaxBytes);
    });
}

function countCommitted(metrics: Metrics, event: TransactionCommitted): void {
  const { topic, result } = event;
  metrics.offsetCommits.inc({ result: event.offsetCommit });
  if (result.applied > 0) metrics.applied.inc({ topic }, result.applied);
  if (result.duplicates.offset > 0)
    metrics.duplicates.inc({ topic, key: "offset" }, result.duplicates.offset);
  if (result.duplicates.event_id > 0)
    metrics.duplicates.inc({ topic, key: "event_id" }, result.duplicates.event_id);
  for (const d of result.deadLettered) metrics.deadLettered.inc({ topic, code: d.code });
  if (event.transactionMs !== undefined)
    metrics.transactionDuration.observe({ topic }, event.transactionMs / 1000);
  metrics.batchDuration.observe({ topic }, event.durationMs / 1000);
}
