import { describe, expect, it } from "vitest";
import { ownFetchBytesPerPartition } from "../../../bench/fetchSize.js";
import { percentile, type ScenarioMeasurement, type ScenarioName } from "../../../bench/scenario.js";
import {
  PRODUCE_REQUEST_BYTES,
  PRODUCER_BATCH_BYTES,
  parseSizeList,
  produceBatchSize,
  shapeCount,
  shapesOf,
} from "../../../bench/shapes.js";
import { coresBusy, evaluateTargets, type ScenarioState } from "../../../bench/targets.js";
import { loadConfig } from "../../../src/config.js";

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
const offsetDedupe = { checkpointRows: 6, eventIdRows: 0, deadLetters: 0, checksum: "every" };
const expected = { events: 990, duplicates: 10, checksum: "abc", everyRecordChecksum: "every" };

function statusOf(states: Map<ScenarioName, ScenarioState>, name: string) {
  const results = evaluateTargets({ states, partitions: 6, expected, count: 1000, naiveLimited: true });
  return results.find((t) => t.name === name)?.status;
}

describe("percentile", () => {
  it("takes the nearest rank", () => {
    expect(percentile([4, 1, 3, 2], 50)).toBe(2);
    expect(percentile([4, 1, 3, 2], 99)).toBe(4);
    expect(percentile([], 50)).toBe(0);
  });
});

describe("evaluateTargets: cores busy and CPU per record (issue 27)", () => {
  // raw-1mib reads 1000 records in 1000 ms with 10 ms of Node CPU: 10 µs a record.
  const raw = () => measurement(1000, 1000, { cpuMs: 10 });

  it("computes cores busy as records/s x (Node + PostgreSQL + broker CPU per record)", () => {
    // 1000 records in 100 ms (10,000/s) x (100 + 50 + 10 µs) = 1.6 cores.
    const m = measurement(1000, 100, { cpuMs: 100, postgresCpuMs: 50, brokerCpuMs: 10 });
    expect(coresBusy(m)).toBeCloseTo(1.6, 6);
    expect(coresBusy(measurement(1000, 100, { cpuMs: 100, postgresCpuMs: null }))).toBeUndefined();
  });

  it.each([
    ["batch-offset", offsetDedupe],
    ["batch", dedupe],
  ] as const)("requires %s to keep at least 1.6 of the 2 cores busy", (scenario, d) => {
    const states = new Map<ScenarioName, ScenarioState>([["raw-1mib", { measurement: raw() }]]);
    const busy = (cpuMs: number) => measurement(1000, 100, { cpuMs, postgresCpuMs: 50, brokerCpuMs: 10 });
    states.set(scenario, { measurement: busy(99), dedupe: d });
    expect(statusOf(states, `${scenario} cores busy`)).toBe("missed");
    states.set(scenario, { measurement: busy(100), dedupe: d });
    expect(statusOf(states, `${scenario} cores busy`)).toBe("met");
  });

  it("skips cores busy when PostgreSQL's or the broker's CPU was not measured", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["batch", { measurement: measurement(1000, 100, { cpuMs: 200, postgresCpuMs: 50 }), dedupe }],
    ]);
    expect(statusOf(states, "batch cores busy")).toBe("skipped");
  });

  it("requires batch-offset's Node CPU per record at most 1.5 x raw-1mib's", () => {
    const states = new Map<ScenarioName, ScenarioState>([["raw-1mib", { measurement: raw() }]]);
    const name = "batch-offset / raw-1mib Node CPU µs/record";
    states.set("batch-offset", {
      measurement: measurement(1000, 100, { cpuMs: 15.1 }),
      dedupe: offsetDedupe,
    });
    expect(statusOf(states, name)).toBe("missed");
    states.set("batch-offset", { measurement: measurement(1000, 100, { cpuMs: 15 }), dedupe: offsetDedupe });
    expect(statusOf(states, name)).toBe("met");
  });

  it("requires replay at most 0.5 x raw-1mib's Node CPU per record and at least 1.5 x its rate", () => {
    const states = new Map<ScenarioName, ScenarioState>([["raw-1mib", { measurement: raw() }]]);
    const cpu = "replay / raw-1mib Node CPU µs/record";
    const speed = "replay / raw-1mib records/s";
    states.set("replay", { measurement: measurement(1000, 667, { cpuMs: 5.1 }), dedupe });
    expect(statusOf(states, cpu)).toBe("missed");
    expect(statusOf(states, speed)).toBe("missed");
    states.set("replay", { measurement: measurement(1000, 666, { cpuMs: 5 }), dedupe });
    expect(statusOf(states, cpu)).toBe("met");
    expect(statusOf(states, speed)).toBe("met");
  });

  it("checks no rate of batch or batch-offset against raw KafkaJS any more, and skips what did not run", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["batch", { measurement: measurement(1000, 1000), dedupe }],
    ]);
    expect(statusOf(states, "batch / raw-1mib")).toBeUndefined();
    expect(statusOf(states, "batch-offset / raw-1mib")).toBeUndefined();
    expect(statusOf(states, "replay / raw-1mib records/s")).toBe("skipped");
    expect(statusOf(states, "batch-offset / raw-1mib Node CPU µs/record")).toBe("skipped");
  });
});

describe("evaluateTargets: memory and state", () => {
  it("checks peak RSS of every replayable scenario; the raw ones are information", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["raw-1mib", { measurement: measurement(1000, 1000, { peakRssBytes: 300 * 1024 * 1024 }) }],
      ["batch", { measurement: measurement(1000, 1000, { peakRssBytes: 257 * 1024 * 1024 }), dedupe }],
      ["replay", { measurement: measurement(1000, 1000, { peakRssBytes: 256 * 1024 * 1024 }), dedupe }],
    ]);
    expect(statusOf(states, "raw-1mib peak RSS MB (no memory limit)")).toBeUndefined();
    expect(statusOf(states, "batch peak RSS MB (no memory limit)")).toBe("missed");
    expect(statusOf(states, "replay peak RSS MB (no memory limit)")).toBe("met");
  });

  it("names the memory limit the peak RSS was measured under", () => {
    const limited = { peakRssBytes: 200 * 1024 * 1024, memoryLimitBytes: 512 * 1024 * 1024 };
    const states = new Map<ScenarioName, ScenarioState>([
      ["batch", { measurement: measurement(1000, 1000, limited), dedupe }],
    ]);
    expect(statusOf(states, "batch peak RSS MB (512 MiB limit)")).toBe("met");
    expect(statusOf(states, "batch peak RSS MB (no memory limit)")).toBeUndefined();
  });

  it("checks one checkpoint row per partition, one event-id row per event and the checksum", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      [
        "batch",
        {
          measurement: measurement(1000, 1000),
          dedupe: { ...dedupe, checkpointRows: 7, eventIdRows: 1000, checksum: "abd", deadLetters: 1 },
        },
      ],
    ]);
    expect(statusOf(states, "batch checkpoint rows (offset-keyed state)")).toBe("missed");
    expect(statusOf(states, "batch event-id rows")).toBe("missed");
    expect(statusOf(states, "batch ledger checksum")).toBe("missed");
    expect(statusOf(states, "batch dead letters")).toBe("missed");
    states.set("batch", { measurement: measurement(1000, 1000), dedupe });
    expect(statusOf(states, "batch ledger checksum")).toBe("met");
    expect(statusOf(states, "batch event-id rows")).toBe("met");
  });

  it("requires offset dedupe to keep no event ids and to give the every-record checksum", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["batch-offset", { measurement: measurement(1000, 1000), dedupe: offsetDedupe }],
    ]);
    const checksum = "batch-offset ledger checksum (every record applied)";
    expect(statusOf(states, checksum)).toBe("met");
    expect(statusOf(states, "batch-offset event-id rows")).toBe("met");
    states.set("batch-offset", {
      measurement: measurement(1000, 1000),
      dedupe: { ...offsetDedupe, checksum: "abc" },
    });
    expect(statusOf(states, checksum)).toBe("missed");
    states.set("batch-offset", {
      measurement: measurement(1000, 1000),
      dedupe: { ...offsetDedupe, eventIdRows: 990 },
    });
    expect(statusOf(states, "batch-offset event-id rows")).toBe("missed");
  });

  it("requires the replay to apply nothing and count every record as a duplicate", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["replay", { measurement: measurement(1000, 1000, { applied: 1, duplicates: 999 }), dedupe }],
    ]);
    expect(statusOf(states, "replay records applied again")).toBe("missed");
    expect(statusOf(states, "replay duplicates counted")).toBe("missed");
    states.set("replay", { measurement: measurement(1000, 1000, { applied: 0, duplicates: 1000 }), dedupe });
    expect(statusOf(states, "replay records applied again")).toBe("met");
    expect(statusOf(states, "replay duplicates counted")).toBe("met");
  });
});

describe("bench shapes", () => {
  it("parses size lists and refuses a bad or repeated item naming the flag", () => {
    expect(parseSizeList("--value-bytes", "200, 700,4096")).toEqual([200, 700, 4096]);
    expect(() => parseSizeList("--partitions", "6,0")).toThrow(
      /--partitions: "0" in "6,0" is not a whole number/,
    );
    expect(() => parseSizeList("--partitions", "6,")).toThrow(/--partitions/);
    expect(() => parseSizeList("--value-bytes", "200,200")).toThrow(
      /--value-bytes: "200,200" lists a value twice/,
    );
  });

  it("measures every value size with every partition count", () => {
    expect(shapesOf([200, 4096], [6, 24])).toEqual([
      { valueBytes: 200, partitions: 6 },
      { valueBytes: 200, partitions: 24 },
      { valueBytes: 4096, partitions: 6 },
      { valueBytes: 4096, partitions: 24 },
    ]);
  });

  it("caps the records of a shape at --max-shape-mib of values", () => {
    expect(shapeCount(200_000, { valueBytes: 200, partitions: 6 }, 256)).toBe(200_000);
    expect(shapeCount(200_000, { valueBytes: 4096, partitions: 6 }, 256)).toBe(65_536);
    expect(shapeCount(200_000, { valueBytes: 700, partitions: 24 }, 64)).toBe(95_869);
  });

  it("keeps a producer request under the broker's 1 MiB record batch for large values", () => {
    expect(produceBatchSize(100, 1, 10 * 1024 * 1024)).toBe(2000);
    expect(produceBatchSize(4096, 1, 10 * 1024 * 1024) * (4096 + 256)).toBeLessThanOrEqual(
      PRODUCE_REQUEST_BYTES,
    );
    expect(produceBatchSize(10 * 1024 * 1024, 1, 16_384)).toBe(1);
  });

  it("sizes a producer request so each partition's record batch is about batch.size", () => {
    // 6 partitions x 16 KiB of 456-byte records: 215 records, about 36 per partition.
    expect(produceBatchSize(200, 6, PRODUCER_BATCH_BYTES)).toBe(215);
    expect(produceBatchSize(200, 24, PRODUCER_BATCH_BYTES)).toBe(862);
    expect(produceBatchSize(4096, 6, PRODUCER_BATCH_BYTES)).toBe(22);
  });

  it("derives the raw scenario's fetch size from the member's memory plan", () => {
    // REPLAYABLE_MAX_BATCH_BYTES set: a cap below the budget's share.
    expect(ownFetchBytesPerPartition(loadConfig({ REPLAYABLE_MAX_BATCH_BYTES: "30000" }), 6, 700)).toBe(
      30_000,
    );
    // The budget shared by the partitions: 24 of them get smaller fetches than 6; small records too.
    const config = loadConfig({ REPLAYABLE_MEMORY_BUDGET_BYTES: String(32 * 1_048_576) });
    expect(ownFetchBytesPerPartition(config, 24, 700)).toBeLessThan(
      ownFetchBytesPerPartition(config, 6, 700),
    );
    expect(ownFetchBytesPerPartition(config, 6, 200)).toBeLessThan(ownFetchBytesPerPartition(config, 6, 700));
    expect(ownFetchBytesPerPartition(config, 6, 4096)).toBeLessThanOrEqual(1_048_576);
  });
});
