import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { ProgressReporter, computeProgress, logPassedPercent } from "../../../src/engine/progressReporter.js";

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

describe("logPassedPercent", () => {
  it("is the share of the log passed since the log start offsets, rounded down to 0.1", () => {
    expect(logPassedPercent({ passed: 1n, total: 3n })).toBe(33.3);
    expect(logPassedPercent({ passed: 2n, total: 3n })).toBe(66.6);
    expect(logPassedPercent({ passed: 0n, total: 40n })).toBe(0);
  });

  it("says 100 only once every record is passed, and for an empty log", () => {
    expect(logPassedPercent({ passed: 9_999n, total: 10_000n })).toBe(99.9);
    expect(logPassedPercent({ passed: 10_000n, total: 10_000n })).toBe(100);
    expect(logPassedPercent({ passed: 0n, total: 0n })).toBe(100);
  });

  it("is exact for offsets above 2^53", () => {
    expect(logPassedPercent({ passed: 2n ** 60n - 1n, total: 2n ** 60n })).toBe(99.9);
    expect(logPassedPercent({ passed: 2n ** 59n, total: 2n ** 60n })).toBe(50);
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

  it("reports totals, the records of the interval, the rate, the lag and the ETA", async () => {
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
    await reporter.report();
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

  it("a shadow's line names its version and state, the percent of the log passed and the records left", async () => {
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
      remainingLag: () => 750n,
      logPassed: () => ({ passed: 250n, total: 1000n }),
      context: () => Promise.resolve({ version: 2, versionState: "shadow" }),
      now: () => now,
    });
    reporter.start();
    now = 5000;
    totals = { applied: 250, duplicates: 0, deadLettered: 0 };
    await reporter.report();
    reporter.stop();
    expect(lines).toEqual([
      {
        version: 2,
        versionState: "shadow",
        applied: 250,
        duplicates: 0,
        deadLettered: 0,
        records: 250,
        intervalMs: 5000,
        recordsPerSecond: 50,
        remainingLag: 750,
        logPassedPercent: 25,
        etaSeconds: 15,
        msg: "progress",
      },
    ]);
  });

  it("a failing context read still logs the line, without those fields", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("info");
    log.info = ((fields: Record<string, unknown>, msg: string) => {
      lines.push({ ...fields, msg });
    }) as typeof log.info;
    const reporter = new ProgressReporter({
      intervalMs: 60_000,
      log,
      totals: () => ({ applied: 0, duplicates: 0, deadLettered: 0 }),
      remainingLag: () => 0n,
      context: () => Promise.reject(new Error("connection lost")),
      now: () => 0,
    });
    await reporter.report();
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toHaveProperty("versionState");
    expect(lines[0]).toMatchObject({ remainingLag: 0, etaSeconds: 0, msg: "progress" });
  });
});
