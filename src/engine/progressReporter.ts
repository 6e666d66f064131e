/**
 * `run`'s progress line: every `intervalMs` the member logs the records it has done (applied,
 * duplicates, dead-lettered), its rate over the interval, the lag remaining on its assigned
 * partitions (the records left), how far it is through the log of those partitions (percent
 * passed since the log start offsets), and an estimate of the time to catch up (remaining lag /
 * rate). A blue/green version's member adds its version and the version's state
 * (docs/replay.md "Progress").
 */
import type { Logger } from "pino";
import { offsetGaugeValue } from "../offsets.js";

/** Records done since the member started, by outcome. */
export interface ProgressTotals {
  readonly applied: number;
  readonly duplicates: number;
  readonly deadLettered: number;
}

/** Records done (all outcomes) at a moment, ms since the epoch. */
export interface ProgressSample {
  readonly atMs: number;
  readonly done: number;
}

/** Rate over an interval and the time left to catch up at that rate. */
export interface Progress {
  /** Records per second over the interval (0 when the interval is empty). */
  readonly recordsPerSecond: number;
  /** Seconds to process `remainingLag` at this rate: 0 when caught up, null when the rate is 0 (unknown). */
  readonly etaSeconds: number | null;
}

/**
 * Rate and ETA between two samples. Pure; rounded for logs (rate to 0.01 records/s, ETA up to
 * the next whole second).
 * @param remainingLag records left on the assigned partitions (sum of lag).
 * @example computeProgress({ atMs: 0, done: 0 }, { atMs: 10_000, done: 500 }, 1000n)
 *   // { recordsPerSecond: 50, etaSeconds: 20 }
 */
export function computeProgress(
  previous: ProgressSample,
  current: ProgressSample,
  remainingLag: bigint,
): Progress {
  const elapsedMs = current.atMs - previous.atMs;
  const done = current.done - previous.done;
  const rate = elapsedMs > 0 && done > 0 ? (done * 1000) / elapsedMs : 0;
  const recordsPerSecond = Math.round(rate * 100) / 100;
  if (remainingLag <= 0n) return { recordsPerSecond, etaSeconds: 0 };
  if (rate === 0) return { recordsPerSecond, etaSeconds: null };
  return { recordsPerSecond, etaSeconds: Math.ceil(offsetGaugeValue(remainingLag) / rate) };
}

/** How far a member is through the log of its assigned partitions; offset distances, summed. */
export interface LogPassed {
  /** Position (next offset to process) minus the log start offset. */
  readonly passed: bigint;
  /** High watermark minus the log start offset. */
  readonly total: bigint;
}

/**
 * Percent of the log passed, `passed / total`, rounded down to 0.1 (so 100 only once every record
 * is passed); 100 for an empty log (total 0), when there is nothing to pass. Pure, exact for
 * offsets above 2^53.
 * @example logPassedPercent({ passed: 1n, total: 3n }) // 33.3
 */
export function logPassedPercent(log: LogPassed): number {
  if (log.total <= 0n || log.passed >= log.total) return 100;
  if (log.passed <= 0n) return 0;
  return Number((log.passed * 1000n) / log.total) / 10;
}

/** How long a line waits for its context fields (ms): a slow database never holds it (or a stop) back. */
const CONTEXT_WAIT_MS = 2000;

/** `fields`, or {} when it fails or takes longer than `ms`. */
async function withinMs(
  fields: Promise<Record<string, unknown>>,
  ms: number,
): Promise<Record<string, unknown>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Record<string, unknown>>((resolve) => {
    timer = setTimeout(() => resolve({}), ms);
  });
  try {
    return await Promise.race([fields.catch(() => ({})), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Options for {@link ProgressReporter}. */
export interface ProgressReporterOptions {
  /** Period between lines, ms; 0 turns the reporter off (REPLAYABLE_PROGRESS_INTERVAL_MS). */
  readonly intervalMs: number;
  readonly log: Logger;
  /** Records done since start. */
  readonly totals: () => ProgressTotals;
  /** Lag summed over the assigned partitions. */
  readonly remainingLag: () => bigint;
  /** How far through the log of the assigned partitions; undefined while unknown (not logged). */
  readonly logPassed?: () => LogPassed | undefined;
  /**
   * Fields added to each line, read when it is logged (a blue/green version's `version` and
   * `versionState`); a failure, or no answer within 2 s, leaves them out of that line.
   */
  readonly context?: () => Promise<Record<string, unknown>>;
  /** Clock, ms; default Date.now. */
  readonly now?: () => number;
}

/** Logs a "progress" line at a fixed interval. `start()` and `stop()` are idempotent. */
export class ProgressReporter {
  private timer: NodeJS.Timeout | undefined;
  private previous: ProgressSample | undefined;
  private stopped = false;

  constructor(private readonly options: ProgressReporterOptions) {}

  /** Starts the timer (does nothing when the interval is 0). */
  start(): void {
    if (this.timer !== undefined || this.stopped || this.options.intervalMs <= 0) return;
    this.previous = this.sample();
    this.timer = setInterval(() => void this.report(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Logs one progress line now (the timer calls this): the numbers as of the call, the
   * {@link ProgressReporterOptions.context} fields once read. Never rejects.
   */
  async report(): Promise<void> {
    const totals = this.options.totals();
    const current = this.sample(totals);
    const previous = this.previous ?? current;
    const lag = this.options.remainingLag();
    const passed = this.options.logPassed?.();
    const { recordsPerSecond, etaSeconds } = computeProgress(previous, current, lag);
    this.previous = current;
    const context = await withinMs(this.options.context?.() ?? Promise.resolve({}), CONTEXT_WAIT_MS);
    this.options.log.info(
      {
        ...context,
        ...totals,
        records: current.done - previous.done,
        intervalMs: current.atMs - previous.atMs,
        recordsPerSecond,
        remainingLag: offsetGaugeValue(lag),
        ...(passed === undefined ? {} : { logPassedPercent: logPassedPercent(passed) }),
        etaSeconds,
      },
      "progress",
    );
  }

  private sample(t: ProgressTotals = this.options.totals()): ProgressSample {
    return { atMs: (this.options.now ?? Date.now)(), done: t.applied + t.duplicates + t.deadLettered };
  }
}
