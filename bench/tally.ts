/** Counting a scenario's batches until every partition reaches its end offset (or a record limit). */
import { PerformanceObserver, type EventLoopUtilization } from "node:perf_hooks";
import { percentile, type ScenarioMeasurement, type ScenarioSpec } from "./scenario.js";

/** One processed batch as a scenario reports it. */
export interface TalliedBatch {
  readonly partition: number;
  readonly lastOffset: string;
  readonly records: number;
  /** When the batch started, ms on performance.now()'s clock. */
  readonly startedAt: number;
  /** When it ended (committed), ms on performance.now()'s clock. */
  readonly endedAt: number;
  readonly applied?: number;
  readonly duplicates?: number;
  readonly deadLettered?: number;
  readonly fastPath?: boolean;
  /** BEGIN to COMMIT of the batch's transaction, ms (replayable's, off the fast path). */
  readonly transactionMs?: number;
}

/** Accumulates batches; `done` resolves once the spec's end offsets or record limit are reached. */
export class Tally {
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly startedAt = performance.now();
  private readonly remaining: Map<number, bigint>;
  private readonly latencies: number[] = [];
  private readonly transactionLatencies: number[] = [];
  private transactionMsTotal = 0;
  private records = 0;
  private applied = 0;
  private duplicates = 0;
  private deadLettered = 0;
  private fastPathBatches = 0;
  private joinedAt: number | undefined;
  private cpuAtJoin: NodeJS.CpuUsage | undefined;
  private cpuAtLast: NodeJS.CpuUsage | undefined;
  private eluAtJoin: EventLoopUtilization | undefined;
  private eluAtLast: EventLoopUtilization | undefined;
  /** Main-thread GC pauses since the join, ms (Node's `gc` performance entries), and at the last batch. */
  private gcMs = 0;
  private gcMsAtLast = 0;
  private readonly gcObserver = new PerformanceObserver((list) => {
    if (this.joinedAt === undefined) return;
    for (const entry of list.getEntries()) this.gcMs += entry.duration;
  });
  private first: number | undefined;
  private last = 0;
  private finished = false;

  constructor(private readonly spec: ScenarioSpec) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    // Partitions still short of their end offset (an empty partition is done from the start).
    this.remaining = new Map(
      spec.end.map((end, partition) => [partition, BigInt(end)] as const).filter(([, end]) => end > 0n),
    );
    this.gcObserver.observe({ entryTypes: ["gc"] });
    if (this.remaining.size === 0) this.finish();
  }

  /** Notes the first group join: the clock of the rate starts here, so fetching counts. */
  joined(): void {
    if (this.joinedAt !== undefined) return;
    this.joinedAt = performance.now();
    this.cpuAtJoin = process.cpuUsage();
    this.eluAtJoin = performance.eventLoopUtilization();
  }

  /** Counts one batch; batches after the end are ignored. */
  add(batch: TalliedBatch): void {
    if (this.finished) return;
    this.first ??= batch.startedAt;
    this.last = batch.endedAt;
    this.cpuAtLast = process.cpuUsage();
    this.eluAtLast = performance.eventLoopUtilization();
    this.gcMsAtLast = this.gcMs;
    this.records += batch.records;
    this.applied += batch.applied ?? 0;
    this.duplicates += batch.duplicates ?? 0;
    this.deadLettered += batch.deadLettered ?? 0;
    if (batch.fastPath === true) this.fastPathBatches += 1;
    this.latencies.push(batch.endedAt - batch.startedAt);
    if (batch.transactionMs !== undefined) {
      this.transactionLatencies.push(batch.transactionMs);
      this.transactionMsTotal += batch.transactionMs;
    }
    const end = this.remaining.get(batch.partition);
    if (end !== undefined && BigInt(batch.lastOffset) + 1n >= end) this.remaining.delete(batch.partition);
    if (this.remaining.size === 0 || (this.spec.limit !== undefined && this.records >= this.spec.limit))
      this.finish();
  }

  /** The measurement so far (without peak RSS and PostgreSQL CPU, which the subprocess adds last). */
  measurement(): Omit<ScenarioMeasurement, "peakRssBytes" | "postgresCpuMs"> {
    const first = this.joinedAt ?? this.first ?? this.startedAt;
    return {
      records: this.records,
      applied: this.applied,
      duplicates: this.duplicates,
      deadLettered: this.deadLettered,
      batches: this.latencies.length,
      fastPathBatches: this.fastPathBatches,
      startupMs: first - this.startedAt,
      elapsedMs: this.last - first,
      firstBatchMs: (this.first ?? first) - first,
      cpuMs: cpuMs(this.cpuAtLast, this.cpuAtJoin),
      eventLoopBusy:
        this.eluAtLast === undefined || this.eluAtJoin === undefined
          ? 0
          : performance.eventLoopUtilization(this.eluAtLast, this.eluAtJoin).utilization,
      gcPauseMs: this.gcMsAtLast,
      batchP50Ms: percentile(this.latencies, 50),
      batchP99Ms: percentile(this.latencies, 99),
      transactionP50Ms: percentile(this.transactionLatencies, 50),
      inTransaction:
        this.last > first && this.spec.end.length > 0
          ? this.transactionMsTotal / ((this.last - first) * this.spec.end.length)
          : 0,
    };
  }

  private finish(): void {
    this.finished = true;
    this.gcObserver.disconnect();
    this.resolveDone();
  }
}

/** User + system CPU time between two readings of process.cpuUsage(), ms; 0 when either is missing. */
function cpuMs(end: NodeJS.CpuUsage | undefined, start: NodeJS.CpuUsage | undefined): number {
  if (end === undefined || start === undefined) return 0;
  return (end.user - start.user + end.system - start.system) / 1000;
}
