/**
 * What the benchmark's parent and its scenario subprocesses exchange: the scenario to run (as JSON
 * on the command line) and what it measured (one JSON line on stdout, after {@link RESULT_MARKER}).
 */
import { readFileSync } from "node:fs";

/**
 * The scenarios of `make bench` in the order they run (docs/benchmarks.md "The scenarios"); `replay`
 * re-reads what `batch` applied, so it comes after it.
 */
export const SCENARIOS = [
  "raw",
  "raw-1mib",
  "raw-platformatic",
  "batch",
  "batch-offset",
  "replay",
  "per-record",
  "naive",
] as const;

/** One of {@link SCENARIOS}. */
export type ScenarioName = (typeof SCENARIOS)[number];

/** What a scenario subprocess is asked to do. */
export interface ScenarioSpec {
  readonly scenario: ScenarioName;
  readonly topic: string;
  readonly group: string;
  readonly brokers: readonly string[];
  /** Database of the scenario (unused by `raw`). */
  readonly databaseUrl: string;
  /** High watermark per partition (index = partition): the scenario is done when every one is reached. */
  readonly end: readonly string[];
  /** Stop after this many records instead (the naive scenario's bounded prefix). */
  readonly limit?: number;
  /** KafkaJS partitionsConsumedConcurrently, the same for every scenario. */
  readonly partitionsConsumedConcurrently: number;
  /**
   * Largest fetch per partition (KafkaJS maxBytesPerPartition), bytes, for the scenarios that drive
   * KafkaJS themselves (`raw`, `raw-1mib`, `naive`); the replayable ones use their own settings.
   */
  readonly maxBytesPerPartition?: number;
  /**
   * The Kafka client of the replayable scenarios' member (KAFKA_CLIENT, `--client`): `kafkajs` or
   * `platformatic`; absent: the member's setting (KafkaJS by default).
   */
  readonly client?: "kafkajs" | "platformatic";
  /**
   * Where to write a sampling allocation profile of the scenario (`--alloc-prof`): V8's sampling
   * heap profiler with the objects garbage-collected since included, so it shows where the
   * allocation goes, not what is retained; open it in Chrome DevTools (Memory) or summarise it with
   * `npx tsx bench/profileSummary.ts <file>`. Absent: none.
   */
  readonly allocationProfile?: string;
}

/** What a scenario measured. Times are ms; the rate counts from the group join to the last batch. */
export interface ScenarioMeasurement {
  readonly records: number;
  readonly applied: number;
  readonly duplicates: number;
  readonly deadLettered: number;
  /** Batches (transactions for replayable; eachBatch calls for raw; records for naive). */
  readonly batches: number;
  /** Batches the replay fast path skipped without a database round trip. */
  readonly fastPathBatches: number;
  /** From start() to the first group join: connecting and joining, ms. */
  readonly startupMs: number;
  /** From the first group join to the end of the last batch, ms: the rate's denominator. */
  readonly elapsedMs: number;
  /** From the first group join to the start of the first batch (the first fetch), ms. */
  readonly firstBatchMs: number;
  /** CPU time (user + system) the subprocess used over elapsedMs, ms: less sensitive to a busy machine. */
  readonly cpuMs: number;
  /**
   * The fraction of elapsedMs the main thread's event loop was busy (0–1; Node's
   * `performance.eventLoopUtilization()`, over the same window): near 1, the member is bound by its
   * one JavaScript thread; well below, it waits (for PostgreSQL, the broker, a slot).
   */
  readonly eventLoopBusy?: number;
  /**
   * The main thread's garbage-collection pauses over elapsedMs, ms (Node's `gc` performance entries:
   * scavenges, mark-compacts and incremental marking steps; V8's helper threads' share is in cpuMs only).
   */
  readonly gcPauseMs?: number;
  /**
   * CPU time of PostgreSQL's processes for the scenario's database (backends and autovacuum), ms,
   * over the whole subprocess; null without a database or when PostgreSQL is not on this machine.
   */
  readonly postgresCpuMs: number | null;
  /**
   * CPU time of the local Kafka broker over the whole subprocess, ms, measured by bench/run.ts (not
   * the subprocess); null when the broker is not this checkout's local one (bench/processCpu.ts).
   */
  readonly brokerCpuMs?: number | null;
  readonly batchP50Ms: number;
  readonly batchP99Ms: number;
  /** Median BEGIN to COMMIT of the transactions, ms; 0 when none ran (raw, replay's fast path). */
  readonly transactionP50Ms?: number;
  /**
   * The fraction of partition-time spent between BEGIN and COMMIT: the transactions' summed
   * durations over elapsedMs × partitions (0–1). Near 1 with the event loop busy: transactions are
   * long because the one JavaScript thread is; near 1 with it idle: PostgreSQL is the wait.
   */
  readonly inTransaction?: number;
  /** VmHWM of the subprocess (peak resident set size), bytes. */
  readonly peakRssBytes: number;
  /**
   * The memory limit (cgroup) the subprocess ran under, bytes, set by bench/run.ts; null: none
   * (`--memory-limit-mib 0`, or no cgroup could be made).
   */
  readonly memoryLimitBytes?: number | null;
}

/** Prefix of the line that carries a {@link ScenarioMeasurement} on the subprocess's stdout. */
export const RESULT_MARKER = "BENCH_RESULT ";

/**
 * The `p`-th percentile (0–100) of `values` by the nearest-rank method; 0 for no values.
 * @example percentile([1, 2, 3, 4], 50) === 2
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/**
 * This process's peak resident set size in bytes: `VmHWM` of /proc/self/status (Linux, see proc(5)).
 * @throws Error when /proc/self/status has no VmHWM line (not Linux).
 */
export function peakRssBytes(): number {
  const status = readFileSync("/proc/self/status", "utf8");
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status);
  if (match === null) throw new Error("VmHWM not found in /proc/self/status; the benchmark needs Linux");
  return Number(match[1]) * 1024;
}
