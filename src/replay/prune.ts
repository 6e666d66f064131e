/**
 * `prune`: delete event-id rows that can never matter again (DESIGN.md "Pruning dedupe state"):
 * a row goes only when its source offset is below its partition's log start offset, because that
 * record can never be read again. Offset checkpoints never need pruning. A dry run by default.
 */
import type pg from "pg";
import type { KafkaAdmin } from "../kafka/admin.js";
import { countEventIdsBelow, countEventIdsByPartition, deleteEventIdsBelow } from "../sql/pruneEventIds.js";

/** One partition's event-id rows and what pruning removes (or would remove). Counts are decimal strings. */
export interface PrunePartition {
  readonly topic: string;
  readonly partition: number;
  /** The partition's log start offset; null when the topic or partition no longer exists. */
  readonly logStartOffset: string | null;
  /** Event-id rows first seen in this partition. */
  readonly eventIds: string;
  /** Rows whose source offset is below the log start offset. */
  readonly prunable: string;
  /** Rows deleted (after `execute`), otherwise "0". */
  readonly deleted: string;
}

/** The outcome of {@link prune}. */
export interface PruneResult {
  readonly projection: string;
  readonly executed: boolean;
  readonly partitions: readonly PrunePartition[];
  readonly totals: { readonly eventIds: string; readonly prunable: string; readonly deleted: string };
}

/**
 * Counts, per partition, the projection's event-id rows below the log start offset and, with
 * `execute`, deletes them (one DELETE per partition). Partitions of topics that no longer exist
 * are reported and left alone: without a log there is no log start offset to prove a record gone
 * (the topic may be recreated and the events re-sent).
 */
export async function prune(options: {
  admin: KafkaAdmin;
  pool: pg.Pool;
  projection: string;
  execute: boolean;
}): Promise<PruneResult> {
  const { admin, pool, projection, execute } = options;
  const counts = await countEventIdsByPartition(pool, projection);
  const logStarts = new Map<string, Map<number, string>>();
  for (const topic of new Set(counts.map((c) => c.topic))) {
    const offsets = (await admin.topicExists(topic)) ? await admin.topicOffsets(topic) : [];
    logStarts.set(topic, new Map(offsets.map((o) => [o.partition, o.logStartOffset])));
  }
  const partitions: PrunePartition[] = [];
  for (const c of counts) {
    const logStartOffset = logStarts.get(c.topic)?.get(c.partition) ?? null;
    const prunable =
      logStartOffset === null || logStartOffset === "0"
        ? "0"
        : await countEventIdsBelow(pool, projection, c.topic, c.partition, logStartOffset);
    const deleted =
      execute && prunable !== "0"
        ? await deleteEventIdsBelow(pool, projection, c.topic, c.partition, logStartOffset!)
        : "0";
    partitions.push({
      topic: c.topic,
      partition: c.partition,
      logStartOffset,
      eventIds: c.rows,
      prunable,
      deleted,
    });
  }
  const sum = (pick: (p: PrunePartition) => string) =>
    partitions.reduce((n, p) => n + BigInt(pick(p)), 0n).toString();
  return {
    projection,
    executed: execute,
    partitions,
    totals: {
      eventIds: sum((p) => p.eventIds),
      prunable: sum((p) => p.prunable),
      deleted: sum((p) => p.deleted),
    },
  };
}
