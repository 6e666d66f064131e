/**
 * `prune`: delete event-id rows that can never matter again (docs/design.md "Pruning dedupe state",
 * docs/design.md for the whole rule). An id row is what makes a later record with the same id a
 * duplicate, so it may go only when no record that could carry the id can still be checked:
 * 1. its source offset is below its partition's log start offset (that record can never be read
 *    again), and
 * 2. every record in the log of the projection's topics when prune starts has been checked: on
 *    every partition, the checkpoint has reached the high watermark read at the start. A re-send of
 *    the event may sit at any offset of any partition of any topic the projection consumes, and
 *    only a record at or past the checkpoint is checked by its event id (below it, the offset key
 *    already makes it a duplicate), so the unread records are [max(checkpoint, log start), high
 *    watermark) on each partition, and pruning waits until there are none.
 * Records produced after prune started are outside the rule: a producer that re-sends an event
 * after its id was pruned gets it applied again (README "Limits").
 * A dry run by default.
 */
import type pg from "pg";
import type { ClusterAdmin } from "../kafka/admin.js";
import type { Logger } from "../logger.js";
import { offsetDistance } from "../offsets.js";
import type { Projection } from "../projection.js";
import { countEventIdsBelow, countEventIdsByPartition, deleteEventIdsBelow } from "../sql/pruneEventIds.js";
import { readCheckpoints, type CheckpointRow } from "../sql/readCheckpoints.js";
import { missingTopicsError } from "../kafka/missingTopicsError.js";
import { topicsNotOnCluster } from "./missingTopics.js";
import { resolveProjectionTopics } from "./projectionTopics.js";

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

/**
 * A partition of the projection's topics with records not yet checked by event id:
 * [max(checkpoint, log start offset), high watermark), an offset distance (an upper bound when
 * offsets have gaps).
 */
export interface UnreadPartition {
  readonly topic: string;
  readonly partition: number;
  /** The projection's checkpoint; null when it has applied nothing here. */
  readonly checkpoint: string | null;
  readonly logStartOffset: string;
  /** As read when prune started. */
  readonly highWatermark: string;
  readonly unread: string;
}

/** The outcome of {@link prune}. */
export interface PruneResult {
  readonly projection: string;
  readonly groupId: string;
  /** The topics whose records were checked for unread ones. */
  readonly topics: readonly string[];
  /** True when rows were deleted (execute, and nothing left unread). */
  readonly executed: boolean;
  readonly partitions: readonly PrunePartition[];
  /** Partitions with unread records; pruning needs none. */
  readonly unread: readonly UnreadPartition[];
  /** Why nothing was (or, in a dry run, would be) deleted. */
  readonly refusal?: { readonly reason: "UNREAD_RECORDS"; readonly message: string };
  readonly totals: { readonly eventIds: string; readonly prunable: string; readonly deleted: string };
}

/** Inputs of {@link prune}. */
export interface PruneOptions {
  readonly admin: ClusterAdmin;
  readonly pool: pg.Pool;
  readonly projection: Pick<Projection<unknown>, "name" | "defaultTopics">;
  /** The projection's consumer group: its committed topics are among the projection's topics. */
  readonly groupId: string;
  /** The projection's topics; empty means those of {@link projectionTopics}. */
  readonly topics: readonly string[];
  readonly execute: boolean;
  /**
   * With `execute`, how long to wait (ms) for the group to read the records that are unread at the
   * start, when it has members; 0 refuses at once. A group without members reads nothing, so it
   * is refused at once.
   */
  readonly waitMs: number;
  /** How often to read the checkpoints again while waiting, ms; default 500. */
  readonly pollMs?: number;
  readonly log?: Logger;
}

/**
 * Counts, per partition, the projection's event-id rows below the log start offset and, with
 * `execute` and no record of the projection's topics left unread (waiting up to `waitMs` for a
 * running group), deletes them (one DELETE per partition). Partitions of topics that no longer
 * exist are reported and left alone: without a log there is no log start offset to prove a record
 * gone (the topic may be recreated and the events re-sent).
 * @throws the KafkaJS error when Kafka cannot be read; ReplayableError CONFIG_INVALID for a named
 *   (or default) topic that does not exist.
 */
export async function prune(options: PruneOptions): Promise<PruneResult> {
  const { admin, pool, projection, groupId, execute } = options;
  const name = projection.name;
  const counts = await countEventIdsByPartition(pool, name);
  const resolved = await resolveProjectionTopics(admin, pool, projection, groupId, options.topics);
  const topics = [...new Set([...resolved.topics, ...counts.map((c) => c.topic)])].sort();
  const absent = await topicsNotOnCluster(admin, topics);
  // A topic named (or defaulted) that does not exist is a usage error; the event ids of a topic
  // deleted since are kept (reported without a log start offset).
  const unknown = resolved.topics.filter((t) => absent.includes(t) && !counts.some((c) => c.topic === t));
  if (resolved.source !== "found" && unknown.length > 0) throw missingTopicsError(unknown, resolved.label);
  const ends = new Map<string, { partition: number; logStartOffset: string; highWatermark: string }[]>();
  for (const topic of topics) if (!absent.includes(topic)) ends.set(topic, await admin.topicOffsets(topic));

  const unread = await waitForUnread(options, ends);
  const refusal = unread.length === 0 ? undefined : unreadRefusal(name, groupId, unread);

  const partitions: PrunePartition[] = [];
  for (const c of counts) {
    const logStartOffset =
      ends.get(c.topic)?.find((o) => o.partition === c.partition)?.logStartOffset ?? null;
    const prunable =
      logStartOffset === null || logStartOffset === "0"
        ? "0"
        : await countEventIdsBelow(pool, name, c.topic, c.partition, logStartOffset);
    const deleted =
      execute && refusal === undefined && prunable !== "0"
        ? await deleteEventIdsBelow(pool, name, c.topic, c.partition, logStartOffset!)
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
    projection: name,
    groupId,
    topics,
    executed: execute && refusal === undefined,
    partitions,
    unread,
    ...(refusal === undefined ? {} : { refusal }),
    totals: {
      eventIds: sum((p) => p.eventIds),
      prunable: sum((p) => p.prunable),
      deleted: sum((p) => p.deleted),
    },
  };
}

/** Per topic, each partition's log start offset and high watermark. */
export type LogEnds = ReadonlyMap<
  string,
  readonly { partition: number; logStartOffset: string; highWatermark: string }[]
>;

/**
 * The partitions with records not yet read; with `execute`, `waitMs` above 0 and a group with
 * members, polls the checkpoints every `pollMs` until none is left or `waitMs` has passed.
 */
async function waitForUnread(options: PruneOptions, ends: LogEnds): Promise<UnreadPartition[]> {
  const { admin, pool, groupId } = options;
  const name = options.projection.name;
  let unread = unreadPartitions(ends, await readCheckpoints(pool, name));
  if (!options.execute || unread.length === 0 || options.waitMs <= 0) return unread;
  const { members } = await admin.describeGroup(groupId);
  if (members.length === 0) return unread;
  options.log?.info(
    { projection: name, groupId, unread: unread.length, waitMs: options.waitMs },
    "waiting for the group to read the records in the log",
  );
  const deadline = Date.now() + options.waitMs;
  while (unread.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
    unread = unreadPartitions(ends, await readCheckpoints(pool, name));
  }
  return unread;
}

/**
 * The partitions with records not yet checked by event id: [max(checkpoint, log start), high
 * watermark) is not empty. A partition without a checkpoint has applied nothing (checkpoint 0).
 */
export function unreadPartitions(ends: LogEnds, checkpoints: readonly CheckpointRow[]): UnreadPartition[] {
  const unread: UnreadPartition[] = [];
  for (const [topic, offsets] of ends) {
    for (const o of offsets) {
      const checkpoint =
        checkpoints.find((c) => c.topic === topic && c.partition === o.partition)?.nextOffset ?? null;
      const from =
        checkpoint !== null && offsetDistance(checkpoint, o.logStartOffset) > 0n
          ? checkpoint
          : o.logStartOffset;
      const n = offsetDistance(o.highWatermark, from);
      if (n > 0n)
        unread.push({
          topic,
          partition: o.partition,
          checkpoint,
          logStartOffset: o.logStartOffset,
          highWatermark: o.highWatermark,
          unread: n.toString(),
        });
    }
  }
  return unread;
}

function unreadRefusal(
  projection: string,
  groupId: string,
  unread: readonly UnreadPartition[],
): { reason: "UNREAD_RECORDS"; message: string } {
  const total = unread.reduce((n, p) => n + BigInt(p.unread), 0n);
  const records = (n: bigint | string) => `${n} unread record${BigInt(n) === 1n ? "" : "s"}`;
  return {
    reason: "UNREAD_RECORDS",
    message: [
      `${total} record${total === 1n ? ` of projection ${projection}'s topics is` : `s of projection ${projection}'s topics are`} not read yet: a re-send of an event among them would be applied again if its id were pruned now. Prune deletes event ids only when the checkpoint has reached the high watermark (as read when prune started) on every partition of the projection's topics:`,
      ...unread.map(
        (p) =>
          `  ${p.topic}:${p.partition} checkpoint ${p.checkpoint ?? "none"}, high watermark ${p.highWatermark}: ${records(p.unread)}`,
      ),
      `Run the consumer (\`replayable run\`, group ${groupId}) until its lag is 0, then prune again; while the group has members, \`prune --execute\` waits up to --wait-ms for it.`,
    ].join("\n"),
  };
}
