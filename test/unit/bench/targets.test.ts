import { describe, expect, it } from "vitest";
import { percentile, type ScenarioMeasurement, type ScenarioName } from "../../../bench/scenario.js";
import { evaluateTargets, type ScenarioState } from "../../../bench/targets.js";

const measurement = (records: number, elapsedMs: number, extra: Partial<ScenarioMeasurement> = {}) =>
  ({
    records,
    applied: 0,
    duplicates: 0,
    deadLettered: 0,
    batches: 1,
    fastPathBatches: 0,
    startupMs: 0,
    elapsedMs,
    firstBatchMs: 0,
    cpuMs: 0,
    postgresCpuMs: null,
    batchP50Ms: 0,
    batchP99Ms: 0,
    peakRssBytes: 100 * 1024 * 1024,
    ...extra,
  }) satisfies ScenarioMeasurement;

const dedupe = { checkpointRows: 6, eventIdRows: 990, deadLetters: 0, checksum: "abc" };
const expected = { events: 990, duplicates: 10, checksum: "abc" };

function statusOf(states: Map<ScenarioName, ScenarioState>, name: string) {
  return evaluateTargets({ states, partitions: 6, expected, count: 1000, naiveLimited: true }).find(
    (t) => t.name === name,
  )?.status;
}

describe("percentile", () => {
  it("takes the nearest rank", () => {
    expect(percentile([4, 1, 3, 2], 50)).toBe(2);
    expect(percentile([4, 1, 3, 2], 99)).toBe(4);
    expect(percentile([], 50)).toBe(0);
  });
});

describe("evaluateTargets", () => {
  it("misses (3) >= 0.5 x (1) below half the raw rate and meets it at half", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["raw", { measurement: measurement(1000, 1000) }],
      ["batch", { measurement: measurement(1000, 2001), dedupe }],
    ]);
    expect(statusOf(states, "(3) batch / (1) raw")).toBe("missed");
    states.set("batch", { measurement: measurement(1000, 2000), dedupe });
    expect(statusOf(states, "(3) batch / (1) raw")).toBe("met");
    expect(statusOf(states, "(5) replay / (1) raw")).toBe("skipped");
  });

  it("checks peak RSS, one checkpoint row per partition, one event-id row per event and the checksum", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      [
        "batch",
        {
          measurement: measurement(1000, 1000, { peakRssBytes: 257 * 1024 * 1024 }),
          dedupe: { ...dedupe, checkpointRows: 7, eventIdRows: 1000, checksum: "abd" },
        },
      ],
    ]);
    expect(statusOf(states, "(3) peak RSS MB")).toBe("missed");
    expect(statusOf(states, "(3) checkpoint rows (offset-keyed state)")).toBe("missed");
    expect(statusOf(states, "(3) event-id rows")).toBe("missed");
    expect(statusOf(states, "(3) ledger checksum")).toBe("missed");
  });

  it("requires the replay to apply nothing and count every record as a duplicate", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["replay", { measurement: measurement(1000, 1000, { applied: 1, duplicates: 999 }), dedupe }],
    ]);
    expect(statusOf(states, "(5) records applied again")).toBe("missed");
    expect(statusOf(states, "(5) duplicates counted")).toBe("missed");
  });
});
