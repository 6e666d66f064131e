import { describe, expect, it } from "vitest";
import { CachedCheckpoint } from "../../src/engine/cachedCheckpoint.js";

describe("CachedCheckpoint", () => {
  it("covers a batch only when its last offset is below the remembered checkpoint", () => {
    const cache = new CachedCheckpoint();
    expect(cache.covering("5", "100")).toBeUndefined();
    cache.remember("10", cache.epoch);
    expect(cache.covering("9", "100")).toBe("10");
    expect(cache.covering("10", "100")).toBeUndefined();
    expect(cache.covering("11", "100")).toBeUndefined();
  });

  it("only moves forward", () => {
    const cache = new CachedCheckpoint();
    cache.remember("10", cache.epoch);
    cache.remember("4", cache.epoch);
    expect(cache.covering("9", "100")).toBe("10");
    cache.remember("20", cache.epoch);
    expect(cache.covering("19", "100")).toBe("20");
  });

  it("forgets everything on an assignment, so the next transaction re-reads the checkpoint", () => {
    const cache = new CachedCheckpoint();
    cache.remember("10", cache.epoch);
    cache.forget();
    expect(cache.known).toBe(false);
    expect(cache.covering("0", "100")).toBeUndefined();
    // After the reset a lower value (a rebuild moved the checkpoint back) is taken as it is.
    cache.remember("3", cache.epoch);
    expect(cache.covering("2", "100")).toBe("3");
    expect(cache.covering("3", "100")).toBeUndefined();
  });

  it("ignores the result of a transaction that began before the latest assignment", () => {
    const cache = new CachedCheckpoint();
    const before = cache.epoch;
    cache.forget();
    cache.remember("10", before);
    expect(cache.known).toBe(false);
    expect(cache.covering("0", "100")).toBeUndefined();
  });

  it("does not cover a batch whose high watermark is below the checkpoint (topic recreated or truncated)", () => {
    const cache = new CachedCheckpoint();
    cache.remember("10", cache.epoch);
    expect(cache.covering("3", "9")).toBeUndefined();
    expect(cache.covering("3", "10")).toBe("10");
  });

  it("compares 64-bit offsets exactly, beyond 2^53", () => {
    const cache = new CachedCheckpoint();
    cache.remember("9007199254740993", cache.epoch);
    expect(cache.covering("9007199254740992", "9223372036854775807")).toBe("9007199254740993");
    expect(cache.covering("9007199254740993", "9223372036854775807")).toBeUndefined();
  });

  it("rejects a checkpoint that is not an offset", () => {
    const cache = new CachedCheckpoint();
    expect(() => cache.remember("ten", cache.epoch)).toThrow(/checkpoint/);
  });
});
