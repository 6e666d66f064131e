import { describe, expect, it } from "vitest";
import { backoffDelayMs } from "../../src/support/backoff.js";

describe("backoffDelayMs", () => {
  it("doubles from the initial delay up to the maximum, with jitter in [base/2, base]", () => {
    const low = () => 0;
    const high = () => 1;
    expect([0, 1, 2, 3].map((a) => backoffDelayMs(a, 200, 30_000, high))).toEqual([200, 400, 800, 1600]);
    expect([0, 1, 2, 3].map((a) => backoffDelayMs(a, 200, 30_000, low))).toEqual([100, 200, 400, 800]);
    expect(backoffDelayMs(20, 200, 30_000, high)).toBe(30_000);
    expect(backoffDelayMs(1000, 200, 30_000, low)).toBe(15_000);
  });
});
