/**
 * `run`'s progress line: every `intervalMs` the member logs the records it has done (applied,
 * duplicates, dead-lettered), its rate over the interval, the lag remaining on its assigned
 * partitions, and an estimate of the time to catch up (remaining lag / rate).
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

/** Options for {@link ProgressReporter}. */
export interface ProgressReporterOptions {
  /** Period between lines, ms; 0 turns the reporter off (REPLAYABLE_PROGRESS_INTERVAL_MS). */
  readonly intervalMs: number;
  readonly log: Logger;
  /** Records done since start. */
  readonly totals: () => ProgressTotals;
  /** Lag summed over the assigned partitions. */
  readonly remainingLag: () => bigint;
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
    this.timer = setInterval(() => this.report(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Logs one progress line now (the timer calls this). */
  report(): void {
    const totals = this.options.totals();
    const current = this.sample(totals);
    const previous = this.previous ?? current;
    const lag = this.options.remainingLag();
    const { recordsPerSecond, etaSeconds } = computeProgress(previous, current, lag);
    this.previous = current;
    this.options.log.info(
      {
        ...totals,
        records: current.done - previous.done,
        intervalMs: current.atMs - previous.atMs,
        recordsPerSecond,
        remainingLag: offsetGaugeValue(lag),
        etaSeconds,
      },
      "progress",
    );
  }

  private sample(t: ProgressTotals = this.options.totals()): ProgressSample {
    return { atMs: (this.options.now ?? Date.now)(), done: t.applied + t.duplicates + t.deadLettered };
  }
}
