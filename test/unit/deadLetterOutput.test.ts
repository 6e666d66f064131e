import { describe, expect, it } from "vitest";
import { bytesView, parseTimeFlag } from "../../src/cli/deadLetterOutput.js";
import { ReplayableError } from "../../src/errors.js";

describe("bytesView", () => {
  it("shows valid UTF-8 as text and anything else as base64", () => {
    expect(bytesView(Buffer.from("Zürich"))).toEqual({ encoding: "utf8", data: "Zürich", bytes: 7 });
    expect(bytesView(Buffer.from([0xff, 0x00]))).toEqual({ encoding: "base64", data: "/wA=", bytes: 2 });
    expect(bytesView(Buffer.alloc(0))).toEqual({ encoding: "utf8", data: "", bytes: 0 });
    expect(bytesView(null)).toBeNull();
  });
});

describe("parseTimeFlag", () => {
  const now = Date.parse("2026-03-01T12:00:00Z");
  it.each([
    ["2026-01-31T12:00:00Z", "2026-01-31T12:00:00.000Z"],
    ["2026-01-31T12:00:00+02:00", "2026-01-31T10:00:00.000Z"],
    ["2026-01-31", "2026-01-31T00:00:00.000Z"],
    ["90s", "2026-03-01T11:58:30.000Z"],
    ["15m", "2026-03-01T11:45:00.000Z"],
    ["2h", "2026-03-01T10:00:00.000Z"],
    ["7d", "2026-02-22T12:00:00.000Z"],
  ])("%s", (value, iso) => {
    expect(parseTimeFlag("--since", value, now)?.toISOString()).toBe(iso);
  });

  it.each(["yesterday", "2026-13-45", "-5m", "5 minutes", "2026/01/31"])(
    "refuses %s, naming the flag",
    (value) => {
      expect(() => parseTimeFlag("--until", value, now)).toThrow(ReplayableError);
      expect(() => parseTimeFlag("--until", value, now)).toThrow(
        /^--until: ".*" is not a time; give an ISO-8601 date-time/,
      );
    },
  );
});
