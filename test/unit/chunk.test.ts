import { describe, expect, it } from "vitest";
import { chunkRecords } from "../../src/engine/chunk.js";
import { backoffDelayMs } from "../../src/support/backoff.js";
import type { KafkaRecord } from "../../src/record.js";

const record = (offset: number, bytes: number): KafkaRecord => ({
  topic: "t",
  partition: 0,
  offset: String(offset),
  timestamp: "0",
  key: null,
  value: Buffer.alloc(bytes),
  headers: {},
});

describe("chunkRecords", () => {
  it("bounds chunks by record count and keeps offset order", () => {
    const chunks = chunkRecords(
      [0, 1, 2, 3, 4].map((o) => record(o, 1)),
      2,
      1000,
    );
    expect(chunks.map((c) => c.records.map((r) => r.offset))).toEqual([["0", "1"], ["2", "3"], ["4"]]);
    expect(chunks.map((c) => c.bytes)).toEqual([2, 2, 1]);
  });

  it("bounds chunks by bytes and gives an oversized record a chunk of its own", () => {
    const chunks = chunkRecords([record(0, 600), record(1, 600), record(2, 5000), record(3, 10)], 100, 1024);
    expect(chunks.map((c) => c.records.map((r) => r.offset))).toEqual([["0"], ["1"], ["2"], ["3"]]);
  });
});

describe("backoffDelayMs", () => {
  it("doubles up to the maximum, with jitter in the upper half", () => {
    expect(backoffDelayMs(0, 200, 30_000, () => 0)).toBe(100);
    expect(backoffDelayMs(0, 200, 30_000, () => 1)).toBe(200);
    expect(backoffDelayMs(3, 200, 30_000, () => 1)).toBe(1600);
    expect(backoffDelayMs(40, 200, 30_000, () => 1)).toBe(30_000);
  });
});
