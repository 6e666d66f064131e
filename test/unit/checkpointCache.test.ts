import { describe, expect, it } from "vitest";
import { CheckpointCache } from "../../src/engine/checkpointCache.js";

describe("CheckpointCache", () => {
  it("covers a batch only when its last offset is below the remembered checkpoint", () => {
    const cache = new CheckpointCache();
    expect(cache.checkpointCovering("t", 0, "5", "100")).toBeUndefined();
    cache.remember("t", 0, "10", cache.epoch);
    expect(cache.checkpointCovering("t", 0, "9", "100")).toBe("10");
    expect(cache.checkpointCovering("t", 0, "10", "100")).toBeUndefined();
    expect(cache.checkpointCovering("t", 0, "11", "100")).toBeUndefined();
  });

  it("keeps partitions and topics apart", () => {
    const cache = new CheckpointCache();
    cache.remember("t", 0, "10", cache.epoch);
    expect(cache.checkpointCovering("t", 1, "0", "100")).toBeUndefined();
    expect(cache.checkpointCovering("u", 0, "0", "100")).toBeUndefined();
    cache.remember("t.1", 2, "7", cache.epoch);
    expect(cache.checkpointCovering("t", 12, "0", "100")).toBeUndefined();
    expect(cache.checkpointCovering("t.1", 2, "6", "100")).toBe("7");
  });

  it("only moves forward", () => {
    const cache = new CheckpointCache();
    cache.remember("t", 0, "10", cache.epoch);
    cache.remember("t", 0, "4", cache.epoch);
    expect(cache.checkpointCovering("t", 0, "9", "100")).toBe("10");
    cache.remember("t", 0, "20", cache.epoch);
    expect(cache.checkpointCovering("t", 0, "19", "100")).toBe("20");
  });

  it("forgets everything on an assignment, so the next transaction re-reads the checkpoint", () => {
    const cache = new CheckpointCache();
    cache.remember("t", 0, "10", cache.epoch);
    cache.remember("t", 1, "10", cache.epoch);
    cache.reset();
    expect(cache.size).toBe(0);
    expect(cache.checkpointCovering("t", 0, "0", "100")).toBeUndefined();
    // After the reset a lower value (a rebuild moved the checkpoint back) is taken as it is.
    cache.remember("t", 0, "3", cache.epoch);
    expect(cache.checkpointCovering("t", 0, "2", "100")).toBe("3");
    expect(cache.checkpointCovering("t", 0, "3", "100")).toBeUndefined();
  });

  it("ignores the result of a transaction that began before the latest assignment", () => {
    const cache = new CheckpointCache();
    const before = cache.epoch;
    cache.reset();
    cache.remember("t", 0, "10", before);
    expect(cache.size).toBe(0);
    expect(cache.checkpointCovering("t", 0, "0", "100")).toBeUndefined();
  });

  it("does not cover a batch whose high watermark is below the checkpoint (topic recreated or truncated)", () => {
    const cache = new CheckpointCache();
    cache.remember("t", 0, "10", cache.epoch);
    expect(cache.checkpointCovering("t", 0, "3", "9")).toBeUndefined();
    expect(cache.checkpointCovering("t", 0, "3", "10")).toBe("10");
  });

  it("compares 64-bit offsets exactly, beyond 2^53", () => {
    const cache = new CheckpointCache();
    cache.remember("t", 0, "9007199254740993", cache.epoch);
    expect(cache.checkpointCovering("t", 0, "9007199254740992", "9223372036854775807")).toBe(
      "9007199254740993",
    );
    expect(cache.checkpointCovering("t", 0, "9007199254740993", "9223372036854775807")).toBeUndefined();
  });

  it("rejects a checkpoint that is not an offset", () => {
    const cache = new CheckpointCache();
    expect(() => cache.remember("t", 0, "ten", cache.epoch)).toThrow(/checkpoint/);
  });
});
