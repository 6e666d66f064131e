import { describe, expect, it } from "vitest";
import { describeResetSpec, parseResetSpec } from "../../../src/replay/resetSpec.js";

describe("parseResetSpec", () => {
  it("reads each reset option", () => {
    expect(parseResetSpec({ toEarliest: true })).toEqual({ kind: "to-earliest" });
    expect(parseResetSpec({ toLatest: true })).toEqual({ kind: "to-latest" });
    expect(parseResetSpec({ toCurrent: true })).toEqual({ kind: "to-current" });
    expect(parseResetSpec({ toOffset: "9007199254740993" })).toEqual({
      kind: "to-offset",
      offset: 9007199254740993n,
    });
    expect(parseResetSpec({ shiftBy: "-9007199254740993" })).toEqual({
      kind: "shift-by",
      shift: -9007199254740993n,
    });
    expect(parseResetSpec({ shiftBy: "+5" })).toEqual({ kind: "shift-by", shift: 5n });
    expect(parseResetSpec({ toDatetime: "1970-01-01T00:00:01Z" })).toMatchObject({
      kind: "to-datetime",
      timestampMs: 1000,
    });
    expect(parseResetSpec({ byDuration: "PT1M" })).toMatchObject({
      kind: "by-duration",
      durationMs: 60_000n,
    });
  });

  it("wants exactly one option", () => {
    expect(() => parseResetSpec({})).toThrow(/no reset option given: give exactly one of --to-earliest/);
    expect(() => parseResetSpec({ toEarliest: true, toOffset: "3" })).toThrow(
      "several reset options given (--to-earliest, --to-offset)",
    );
  });

  it.each([
    [{ toOffset: "-1" }, "--to-offset: -1 is negative"],
    [{ toOffset: "12abc" }, '--to-offset: "12abc" is not a whole number'],
    [{ toOffset: "9223372036854775808" }, "outside the 64-bit range"],
    [{ shiftBy: "1.5" }, '--shift-by: "1.5" is not a whole number'],
    [{ shiftBy: "-9223372036854775809" }, "outside the 64-bit range"],
    [{ shiftBy: "9223372036854775808" }, "outside the 64-bit range"],
  ])("refuses %o", (flags, message) => {
    expect(() => parseResetSpec(flags)).toThrow(message);
  });

  it("takes every shift in the signed 64-bit range, INT64's minimum and maximum included", () => {
    expect(parseResetSpec({ shiftBy: "-9223372036854775808" })).toEqual({
      kind: "shift-by",
      shift: -(2n ** 63n),
    });
    expect(parseResetSpec({ shiftBy: "9223372036854775807" })).toEqual({
      kind: "shift-by",
      shift: 2n ** 63n - 1n,
    });
  });

  it("describes a spec as its flags", () => {
    expect(describeResetSpec({ kind: "shift-by", shift: -10n })).toBe("--shift-by -10");
    expect(describeResetSpec({ kind: "to-earliest" })).toBe("--to-earliest");
    expect(describeResetSpec(parseResetSpec({ byDuration: "PT5M" }))).toBe("--by-duration PT5M");
  });
});
