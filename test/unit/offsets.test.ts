import { describe, expect, it } from "vitest";
import {
  committedOffsetOrNone,
  compareOffsets,
  maxOffset,
  nextOffset,
  offsetDistance,
  parseOffset,
} from "../../src/offsets.js";

describe("offsets", () => {
  it("stays exact above 2^53", () => {
    expect(nextOffset("9007199254740993")).toBe("9007199254740994");
    expect(nextOffset("9223372036854775806")).toBe("9223372036854775807");
    expect(offsetDistance("9007199254740995", "9007199254740993")).toBe(2n);
  });

  it("compares numerically, not as text", () => {
    expect(compareOffsets("9", "10")).toBeLessThan(0);
    expect(compareOffsets("9007199254740993", "9007199254740992")).toBeGreaterThan(0);
    expect(compareOffsets("42", "42")).toBe(0);
    expect(maxOffset("100", "99")).toBe("100");
  });

  it("rejects text that is not a 64-bit offset, naming the field", () => {
    expect(() => parseOffset("12a", "--to-offset")).toThrow(/--to-offset: "12a" is not an offset/);
    expect(() => parseOffset("1.5")).toThrow(RangeError);
    expect(() => parseOffset("9223372036854775808")).toThrow(/outside the 64-bit range/);
    expect(parseOffset("-1")).toBe(-1n);
  });

  it("reads every negative committed offset as none, as the Java consumer and KafkaJS do", () => {
    expect(committedOffsetOrNone("-1")).toBeNull();
    expect(committedOffsetOrNone("-2")).toBeNull();
    expect(committedOffsetOrNone("-9223372036854775808")).toBeNull();
    expect(committedOffsetOrNone(undefined)).toBeNull();
    expect(committedOffsetOrNone(null)).toBeNull();
    expect(committedOffsetOrNone("0")).toBe("0");
    expect(committedOffsetOrNone("9007199254740993")).toBe("9007199254740993");
    expect(() => committedOffsetOrNone("x")).toThrow(/committed offset: "x" is not an offset/);
  });
});
