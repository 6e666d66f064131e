/**
 * The per-partition gauges of a member: consumer lag, checkpoint, and the gap between the
 * checkpoint and the group's committed offset, for the partitions currently assigned to it; and
 * progress detection: a partition whose position has not moved for `stallTimeoutMs` while it has
 * lag is stalled (one warning per stall, `replayable_partition_stalled`, {@link LagMonitor.stallReason}).
 * Updated after every batch, and refreshed every `intervalMs` from Kafka (high watermarks,
 * committed offsets) and PostgreSQL (checkpoints), so they stay right while the member is idle
 * (KafkaJS reports nothing for empty fetches) and right after a join, before the first batch.
 */
import type pg from "pg";
import type { Logger } from "pino";
import { errorMessage } from "../errors.js";
import type { ClusterAdmin, PartitionOffsets } from "../kafka/admin.js";
import type { Metrics } from "../metrics/metrics.js";
import { compareOffsets, offsetDistance, offsetGaugeValue, type OffsetString } from "../offsets.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";
import { partitionKey, type Assignment, type PartitionKey } from "../topicPartition.js";
import type { MemberEvents } from "./memberEvents.js";
import type { LogPassed } from "./progressReporter.js";

/** Options for {@link LagMonitor}. */
export interface LagMonitorOptions {
  readonly metrics: Metrics;
  readonly groupId: string;
  readonly projection: string;
  readonly topics: readonly string[];
  /** The admin client for refreshes; shared with its owner, who closes it (the monitor never does). */
  readonly admin: () => Promise<ClusterAdmin>;
  readonly pool: pg.Pool;
  /** Refresh period, ms. */
  readonly intervalMs: number;
  /** No progress for this long while the lag is above 0 makes a partition stalled, ms. */
  readonly stallTimeoutMs: number;
  readonly log: Logger;
}

/** What the monitor knows of one assigned partition. Offsets are strings (64-bit). */
interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** Next offset this member will process, once it has processed a batch. */
  position?: OffsetString;
  highWatermark?: OffsetString;
  logStartOffset?: OffsetString;
  /** The group's committed offset; "-1" when none. */
  committed?: OffsetString;
  checkpoint?: OffsetString;
  /** The position when the partition last made progress (moved forward, or had no lag). */
  progressMark?: OffsetString;
  /** When it last made progress (or was assigned), ms on the monotonic clock. */
  progressAt: number;
  /** True from the stall's warning until the partition makes progress again. */
  stalled: boolean;
}

/** A stalled partition, as {@link LagMonitor.stalledPartitions} reports it. Offsets are strings. */
export interface StalledPartition {
  readonly topic: string;
  readonly partition: number;
  /** The group's committed offset, or undefined when none. */
  readonly committedOffset: OffsetString | undefined;
  readonly highWatermark: OffsetString | undefined;
  /** Records behind the high watermark. */
  readonly lag: string;
  /** Time since the partition last made progress, ms. */
  readonly noProgressForMs: number;
}

/** A batch the consumer finished: the transaction committed, then the offset commit ran. */
export interface CommittedBatch {
  readonly topic: string;
  readonly partition: number;
  /** High watermark when the batch was fetched. */
  readonly highWatermark: OffsetString;
  /** Last offset of the batch + 1. */
  readonly nextOffset: OffsetString;
  /** The checkpoint after COMMIT. */
  readonly checkpoint: OffsetString;
  /** True when `nextOffset` was committed to Kafka. */
  readonly offsetCommitted: boolean;
}

/** Where the gauges' numbers come from. */
type Source = "Kafka" | "PostgreSQL";

/**
 * Keeps `replayable_consumer_lag_records`, `replayable_checkpoint_offset`,
 * `replayable_checkpoint_commit_gap_records` and `replayable_assigned_partitions` in step with
 * the member's assignment. `start()` and `stop()` are idempotent.
 *
 * Lag = high watermark - next offset to process (the member's position after its last batch;
 * before that, the committed offset, or the log start offset when the group has none, as a new
 * group starts from the earliest offset). Never below 0.
 */
export class LagMonitor {
  private readonly partitions = new Map<PartitionKey, PartitionState>();
  private timer: NodeJS.Timeout | undefined;
  /** The refresh of each source in flight: a slow checkpoint read never holds the lag back. */
  private readonly inFlight: Partial<Record<Source, Promise<void>>> = {};
  private stopped = false;
  private readonly failing: Record<Source, boolean> = { Kafka: false, PostgreSQL: false };

  constructor(private readonly options: LagMonitorOptions) {}

  /** Starts the periodic refresh. */
  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setInterval(() => void this.refresh(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops refreshing, waits for a refresh in flight and unassigns everything. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.all([this.inFlight.Kafka, this.inFlight.PostgreSQL]);
    this.unassignAll();
  }

  /** The member's new assignment (after a group join): drops the rows of partitions it lost. */
  assign(assignment: Assignment): void {
    const next = new Set<PartitionKey>();
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) next.add(partitionKey(topic, partition));
    }
    for (const [key, state] of this.partitions) {
      if (!next.has(key)) this.forget(key, state);
    }
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) {
        const key = partitionKey(topic, partition);
        // A partition kept across a rebalance restarts from the committed offset: forget the position.
        this.partitions.set(key, { topic, partition, progressAt: performance.now(), stalled: false });
      }
    }
    this.options.metrics.assignedPartitions.set(this.partitions.size);
    if (!this.stopped) void this.refresh();
  }

  /** The member left the group, stopped or crashed: no partitions, no per-partition rows. */
  unassignAll(): void {
    for (const [key, state] of this.partitions) this.forget(key, state);
    this.options.metrics.assignedPartitions.set(0);
  }

  /** Follows the member: its assignments, the end of its membership and its committed transactions. */
  observe(events: MemberEvents): void {
    events
      .on("assigned", (event) => this.assign(event.assignment))
      .on("revoked", () => this.unassignAll())
      .on("batchCommitted", (event) =>
        this.batchCommitted({
          topic: event.topic,
          partition: event.partition,
          highWatermark: event.highWatermark,
          nextOffset: event.result.nextOffset,
          checkpoint: event.result.checkpoint,
          offsetCommitted: event.offsetCommit === "committed",
        }),
      );
  }

  /** Updates a partition's gauges after a batch. Ignored for a partition no longer assigned. */
  batchCommitted(batch: CommittedBatch): void {
    const state = this.partitions.get(partitionKey(batch.topic, batch.partition));
    if (state === undefined) return;
    state.position = batch.nextOffset;
    state.highWatermark = later(state.highWatermark, batch.highWatermark);
    state.checkpoint = later(state.checkpoint, batch.checkpoint);
    if (batch.offsetCommitted) state.committed = later(state.committed, batch.nextOffset);
    this.publish(state);
  }

  /** The assigned partitions stalled now: no progress for `stallTimeoutMs` while their lag is above 0. */
  stalledPartitions(): StalledPartition[] {
    const now = performance.now();
    return [...this.partitions.values()]
      .filter((state) => state.stalled)
      .map((state) => ({
        topic: state.topic,
        partition: state.partition,
        committedOffset:
          state.committed === undefined || state.committed === "-1" ? undefined : state.committed,
        highWatermark: state.highWatermark,
        lag: String(lagOf(state) ?? 0n),
        noProgressForMs: Math.round(now - state.progressAt),
      }));
  }

  /**
   * Why the member is not ready because of stalled partitions (for /readyz), naming each with its
   * committed offset and high watermark; undefined when none is stalled.
   */
  stallReason(): string | undefined {
    const stalled = this.stalledPartitions();
    if (stalled.length === 0) return undefined;
    const list = stalled
      .map(
        (s) =>
          `${s.topic}/${s.partition} (committed offset ${s.committedOffset ?? "none"}, high watermark ${s.highWatermark ?? "unknown"}, lag ${s.lag})`,
      )
      .join(", ");
    return `no progress for at least ${this.options.stallTimeoutMs} ms while records wait on ${list}`;
  }

  /** Lag summed over the assigned partitions whose lag is known, in records. */
  remainingLag(): bigint {
    let sum = 0n;
    for (const state of this.partitions.values()) sum += lagOf(state) ?? 0n;
    return sum;
  }

  /**
   * How far the member is through the log of its assigned partitions: the position (next offset to
   * process) and the high watermark, each minus the log start offset, summed over the partitions
   * where all three are known; undefined when none is (before the first refresh).
   */
  logPassed(): LogPassed | undefined {
    let passed = 0n;
    let total = 0n;
    let known = false;
    for (const state of this.partitions.values()) {
      const position = state.position ?? committedOrStart(state);
      const { logStartOffset: start, highWatermark: end } = state;
      if (position === undefined || start === undefined || end === undefined) continue;
      known = true;
      const span = offsetDistance(end, start);
      const moved = offsetDistance(position, start);
      total += span > 0n ? span : 0n;
      passed += moved < 0n ? 0n : moved > span ? span : moved;
    }
    return known ? { passed, total } : undefined;
  }

  /**
   * Reads high watermarks and committed offsets from Kafka, and checkpoints from PostgreSQL, each
   * updating the gauges when it has its answer: the checkpoint read may wait for a pooled
   * connection (a database outage holds them), and the lag is what an operator watches then. A
   * failure is logged (warn once, then debug) and retried next time. Concurrent calls share each
   * source's refresh in flight.
   */
  refresh(): Promise<void> {
    return Promise.all([
      this.shared("Kafka", () => this.refreshFromKafka()),
      this.shared("PostgreSQL", () => this.refreshCheckpoints()),
    ]).then(() => undefined);
  }

  private shared(source: Source, refresh: () => Promise<void>): Promise<void> {
    this.inFlight[source] ??= refresh().finally(() => (this.inFlight[source] = undefined));
    return this.inFlight[source];
  }

  private async refreshFromKafka(): Promise<void> {
    if (this.partitions.size === 0 || this.stopped) return;
    const { groupId } = this.options;
    const topics = [...new Set([...this.partitions.values()].map((s) => s.topic))];
    let problem: string | undefined;
    try {
      const admin = await this.options.admin();
      const [ends, committed] = await Promise.all([
        Promise.all(topics.map(async (topic) => ({ topic, offsets: await admin.topicOffsets(topic) }))),
        admin.committedOffsets(groupId, topics),
      ]);
      for (const { topic, offsets } of ends) this.applyEnds(topic, offsets);
      for (const c of committed) {
        const state = this.partitions.get(partitionKey(c.topic, c.partition));
        if (state !== undefined) state.committed = later(state.committed, c.offset);
      }
    } catch (error) {
      problem = errorMessage(error);
    }
    this.publishAll("Kafka", problem);
  }

  private async refreshCheckpoints(): Promise<void> {
    if (this.partitions.size === 0 || this.stopped) return;
    const { projection, pool } = this.options;
    let problem: string | undefined;
    try {
      for (const row of await readCheckpoints(pool, projection)) {
        const state = this.partitions.get(partitionKey(row.topic, row.partition));
        if (state !== undefined) state.checkpoint = later(state.checkpoint, row.nextOffset);
      }
    } catch (error) {
      problem = errorMessage(error);
    }
    this.publishAll("PostgreSQL", problem);
  }

  /** Sets every assigned partition's gauges, and reports how `source`'s read went. */
  private publishAll(source: Source, problem: string | undefined): void {
    if (this.stopped) return;
    for (const state of this.partitions.values()) this.publish(state);
    this.reportProblem(source, problem);
  }

  private applyEnds(topic: string, offsets: readonly PartitionOffsets[]): void {
    for (const o of offsets) {
      const state = this.partitions.get(partitionKey(topic, o.partition));
      if (state === undefined) continue;
      state.highWatermark = later(state.highWatermark, o.highWatermark);
      state.logStartOffset = o.logStartOffset;
    }
  }

  private publish(state: PartitionState): void {
    const { metrics } = this.options;
    const labels = { topic: state.topic, partition: String(state.partition) };
    const lag = lagOf(state);
    if (lag !== undefined) metrics.lag.set(labels, offsetGaugeValue(lag));
    this.watchProgress(state, lag);
    metrics.partitionStalled.set(labels, state.stalled ? 1 : 0);
    if (state.checkpoint !== undefined) {
      metrics.checkpoint.set(labels, offsetGaugeValue(state.checkpoint));
      const committed = committedOrStart(state);
      if (committed !== undefined) {
        metrics.checkpointCommitGap.set(
          labels,
          offsetGaugeValue(offsetDistance(state.checkpoint, committed)),
        );
      }
    }
  }

  /**
   * Progress = the position (next offset to process) moved forward, or nothing waits (lag 0 or
   * unknown). Without progress for `stallTimeoutMs` the partition is stalled: warned about once,
   * until progress resumes (then an info line). A paused partition retrying an outage, a batch
   * KafkaJS cannot get past, or a transaction blocked for minutes all show here.
   */
  private watchProgress(state: PartitionState, lag: bigint | undefined): void {
    const { log, stallTimeoutMs } = this.options;
    const now = performance.now();
    const position = state.position ?? committedOrStart(state);
    const moved =
      position !== undefined &&
      (state.progressMark === undefined || compareOffsets(position, state.progressMark) > 0);
    const fields = {
      topic: state.topic,
      partition: state.partition,
      committedOffset: state.committed === "-1" ? undefined : state.committed,
      highWatermark: state.highWatermark,
      position,
      lag: lag === undefined ? undefined : String(lag),
    };
    if (lag === undefined || lag === 0n || moved) {
      if (position !== undefined) state.progressMark = position;
      state.progressAt = now;
      if (state.stalled) {
        state.stalled = false;
        log.info(fields, "partition makes progress again");
      }
      return;
    }
    if (!state.stalled && now - state.progressAt >= stallTimeoutMs) {
      state.stalled = true;
      log.warn(
        { ...fields, noProgressForMs: Math.round(now - state.progressAt) },
        "partition makes no progress while it has lag",
      );
    }
  }

  private forget(key: PartitionKey, state: PartitionState): void {
    const { metrics } = this.options;
    const labels = { topic: state.topic, partition: String(state.partition) };
    metrics.lag.remove(labels);
    metrics.checkpoint.remove(labels);
    metrics.checkpointCommitGap.remove(labels);
    metrics.partitionStalled.remove(labels);
    this.partitions.delete(key);
  }

  private reportProblem(source: Source, problem: string | undefined): void {
    const { log } = this.options;
    if (problem === undefined) {
      if (this.failing[source]) log.info({ source }, "lag refresh works again");
      this.failing[source] = false;
      return;
    }
    const fields = { problems: [`${source}: ${problem}`], retryInMs: this.options.intervalMs };
    if (this.failing[source]) log.debug(fields, "lag refresh failed");
    else log.warn(fields, "lag refresh failed; the lag and checkpoint gauges may be stale");
    this.failing[source] = true;
  }
}

/**
 * The later of a known and a newly read offset. While this member owns a partition, its high
 * watermark, committed offset and checkpoint only move forward (a reset or a rebuild needs the
 * group inactive, which ends the assignment), so a refresh that read an older value than a batch
 * just reported must not move them back.
 */
function later(known: OffsetString | undefined, read: OffsetString): OffsetString {
  return known === undefined || compareOffsets(read, known) > 0 ? read : known;
}

/** The committed offset, or the log start offset when the group has none (a new group reads from the earliest). */
function committedOrStart(state: PartitionState): OffsetString | undefined {
  if (state.committed !== undefined && state.committed !== "-1") return state.committed;
  return state.logStartOffset;
}

/** High watermark - next offset to process, at least 0; undefined while either is unknown. */
function lagOf(state: PartitionState): bigint | undefined {
  const position = state.position ?? committedOrStart(state);
  if (state.highWatermark === undefined || position === undefined) return undefined;
  const lag = offsetDistance(state.highWatermark, position);
  return lag > 0n ? lag : 0n;
}
