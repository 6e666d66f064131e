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
import { evaluateTargets, type ScenarioState } from "../../../bench/targets.js";
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

describe("evaluateTargets: rates against raw KafkaJS at 1 MiB fetches", () => {
  // raw-1mib reads 1000 records in 1000 ms: 1000 records/s.
  const base = (): Map<ScenarioName, ScenarioState> =>
    new Map([["raw-1mib", { measurement: measurement(1000, 1000) }]]);

  it.each([
    ["batch-offset", 0.8, offsetDedupe],
    ["batch", 0.6, dedupe],
    ["replay", 1.5, dedupe],
  ] as const)("misses %s >= %s x raw-1mib just below and meets it at the ratio", (scenario, atLeast, d) => {
    const states = base();
    const elapsedAt = 1000 / atLeast;
    states.set(scenario, { measurement: measurement(1000, elapsedAt + 1), dedupe: d });
    expect(statusOf(states, `${scenario} / raw-1mib`)).toBe("missed");
    states.set(scenario, { measurement: measurement(1000, elapsedAt), dedupe: d });
    expect(statusOf(states, `${scenario} / raw-1mib`)).toBe("met");
  });

  it("skips a rate target whose scenarios did not run, and does not compare with raw at own size", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["raw", { measurement: measurement(1000, 100) }],
      ["batch", { measurement: measurement(1000, 1000), dedupe }],
    ]);
    expect(statusOf(states, "batch / raw-1mib")).toBe("skipped");
    expect(statusOf(states, "replay / raw-1mib")).toBe("skipped");
    expect(statusOf(states, "batch / raw")).toBeUndefined();
  });
});

describe("evaluateTargets: PostgreSQL CPU of event-id dedupe against offset dedupe", () => {
  const states = (batchPgMs: number, offsetPgMs: number | null) =>
    new Map<ScenarioName, ScenarioState>([
      ["batch", { measurement: measurement(1000, 1000, { postgresCpuMs: batchPgMs }), dedupe }],
      [
        "batch-offset",
        { measurement: measurement(1000, 1000, { postgresCpuMs: offsetPgMs }), dedupe: offsetDedupe },
      ],
    ]);
  const name = "batch / batch-offset PG CPU µs/record";

  it("meets at 1.3 x and misses above", () => {
    expect(statusOf(states(13, 10), name)).toBe("met");
    expect(statusOf(states(13.1, 10), name)).toBe("missed");
  });

  it("is skipped when PostgreSQL's CPU was not measured", () => {
    expect(statusOf(states(13, null), name)).toBe("skipped");
  });
});

describe("evaluateTargets: memory and state", () => {
  it("checks peak RSS of every scenario, the raw ones too", () => {
    const states = new Map<ScenarioName, ScenarioState>([
      ["raw-1mib", { measurement: measurement(1000, 1000, { peakRssBytes: 257 * 1024 * 1024 }) }],
      ["raw", { measurement: measurement(1000, 1000, { peakRssBytes: 256 * 1024 * 1024 }) }],
    ]);
    expect(statusOf(states, "raw-1mib peak RSS MB")).toBe("missed");
    expect(statusOf(states, "raw peak RSS MB")).toBe("met");
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
