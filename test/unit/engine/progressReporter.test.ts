import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { ProgressReporter, computeProgress } from "../../../src/engine/progressReporter.js";

describe("computeProgress", () => {
  it("rate is records done over the interval, ETA is remaining lag over the rate", () => {
    expect(computeProgress({ atMs: 0, done: 0 }, { atMs: 10_000, done: 500 }, 1000n)).toEqual({
      recordsPerSecond: 50,
      etaSeconds: 20,
    });
  });

  it("rounds the rate to 0.01 records/s and the ETA up to a whole second", () => {
    expect(computeProgress({ atMs: 1000, done: 10 }, { atMs: 4000, done: 11 }, 1n)).toEqual({
      recordsPerSecond: 0.33,
      etaSeconds: 3,
    });
  });

  it("a member that is caught up has ETA 0, even when idle", () => {
    expect(computeProgress({ atMs: 0, done: 7 }, { atMs: 5000, done: 7 }, 0n)).toEqual({
      recordsPerSecond: 0,
      etaSeconds: 0,
    });
  });

  it("no progress while records remain: the ETA is unknown (null), never Infinity", () => {
    expect(computeProgress({ atMs: 0, done: 7 }, { atMs: 5000, done: 7 }, 42n)).toEqual({
      recordsPerSecond: 0,
      etaSeconds: null,
    });
  });

  it("an empty interval (same instant) gives rate 0, not a division by zero", () => {
    expect(computeProgress({ atMs: 5, done: 0 }, { atMs: 5, done: 3 }, 9n)).toEqual({
      recordsPerSecond: 0,
      etaSeconds: null,
    });
  });

  it("stays finite for a lag above 2^53", () => {
    const eta = computeProgress({ atMs: 0, done: 0 }, { atMs: 1000, done: 1000 }, 2n ** 60n).etaSeconds;
    expect(eta).toBe(Math.ceil(2 ** 60 / 1000));
  });
});

describe("ProgressReporter", () => {
  it("start and stop are idempotent, and an interval of 0 reports nothing", () => {
    const reporter = new ProgressReporter({
      intervalMs: 0,
      log: createLogger("silent"),
      totals: () => ({ applied: 0, duplicates: 0, deadLettered: 0 }),
      remainingLag: () => 0n,
    });
    reporter.start();
    reporter.start();
    reporter.stop();
    reporter.stop();
  });

  it("reports totals, the records of the interval, the rate, the lag and the ETA", () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("info");
    log.info = ((fields: Record<string, unknown>, msg: string) => {
      lines.push({ ...fields, msg });
    }) as typeof log.info;
    let now = 0;
    let totals = { applied: 0, duplicates: 0, deadLettered: 0 };
    const reporter = new ProgressReporter({
      intervalMs: 60_000,
      log,
      totals: () => totals,
      remainingLag: () => 300n,
      now: () => now,
    });
    reporter.start();
    now = 2000;
    totals = { applied: 150, duplicates: 40, deadLettered: 10 };
    reporter.report();
    reporter.stop();
    expect(lines).toEqual([
      {
        applied: 150,
        duplicates: 40,
        deadLettered: 10,
        records: 200,
        intervalMs: 2000,
        recordsPerSecond: 100,
        remainingLag: 300,
        etaSeconds: 3,
        msg: "progress",
      },
    ]);
  });
});
