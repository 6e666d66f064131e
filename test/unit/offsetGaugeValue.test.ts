import { describe, expect, it } from "vitest";
import { offsetDistance, offsetGaugeValue } from "../../src/offsets.js";

describe("offsetGaugeValue", () => {
  it("converts offsets and offset differences to numbers, exactly below 2^53", () => {
    expect(offsetGaugeValue("42")).toBe(42);
    expect(offsetGaugeValue(offsetDistance("120", "100"))).toBe(20);
    expect(offsetGaugeValue(-3n)).toBe(-3);
    expect(offsetGaugeValue("9007199254740991")).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("rounds to the nearest double above 2^53, as a Prometheus float64 sample must", () => {
    expect(offsetGaugeValue("9007199254740993")).toBe(9007199254740992);
  });

  it("rejects text that is not an offset", () => {
    expect(() => offsetGaugeValue("12abc")).toThrow(RangeError);
  });
});
