import { describe, expect, it } from "vitest";
import { parseIsoDuration, parseKafkaDateTime, timestampBefore } from "../../../src/replay/timeSpecs.js";

describe("parseKafkaDateTime", () => {
  it("reads a date-time without a zone as UTC, as Kafka's Utils.getDateTime does", () => {
    expect(parseKafkaDateTime("2026-01-31T09:30:00")).toBe(Date.UTC(2026, 0, 31, 9, 30, 0));
    expect(parseKafkaDateTime("2026-01-31T09:30:00.123")).toBe(Date.UTC(2026, 0, 31, 9, 30, 0, 123));
  });

  it("applies Z, ±hh:mm, ±hhmm and ±hh zones", () => {
    const utc = Date.UTC(2026, 0, 31, 8, 30, 0, 5);
    expect(parseKafkaDateTime("2026-01-31T08:30:00.005Z")).toBe(utc);
    expect(parseKafkaDateTime("2026-01-31T09:30:00.005+01:00")).toBe(utc);
    expect(parseKafkaDateTime("2026-01-31T09:30:00.005+0100")).toBe(utc);
    expect(parseKafkaDateTime("2026-01-31T09:30:00.005+01")).toBe(utc);
    expect(parseKafkaDateTime("2026-01-31T03:00:00.005-05:30")).toBe(utc);
  });

  it("accepts the epoch and leap days", () => {
    expect(parseKafkaDateTime("1970-01-01T00:00:00Z")).toBe(0);
    expect(parseKafkaDateTime("2024-02-29T00:00:00Z")).toBe(Date.UTC(2024, 1, 29));
    expect(parseKafkaDateTime("2000-02-29T00:00:00Z")).toBe(Date.UTC(2000, 1, 29));
  });

  it.each([
    ["2026-01-31 09:30:00", "not an ISO-8601 date-time"],
    ["2026-01-31", "not an ISO-8601 date-time"],
    ["2026-01-31T09:30", "not an ISO-8601 date-time"],
    ["2026-01-31T09:30:00.1", "not an ISO-8601 date-time"],
    ["2026-13-01T00:00:00", "month 13"],
    ["2026-02-29T00:00:00", "day 29"],
    ["1900-02-29T00:00:00", "day 29"],
    ["2026-04-31T00:00:00", "day 31"],
    ["2026-01-01T24:00:00", "does not exist"],
    ["2026-01-01T00:60:00", "does not exist"],
    ["2026-01-01T00:00:00+19:00", "zone"],
    ["1969-12-31T23:59:59.999Z", "before 1970"],
    ["1970-01-01T00:30:00+01:00", "before 1970"],
  ])("refuses %s, naming the flag (%s)", (text, why) => {
    expect(() => parseKafkaDateTime(text)).toThrow(/--to-datetime/);
    expect(() => parseKafkaDateTime(text)).toThrow(why);
  });
});

describe("parseIsoDuration", () => {
  it.each([
    ["PT30M", 30n * 60_000n],
    ["PT1H", 3_600_000n],
    ["P1D", 86_400_000n],
    ["P1DT2H", 93_600_000n],
    ["P1DT2H3M4S", 93_784_000n],
    ["PT0.5S", 500n],
    ["PT1,25S", 1_250n],
    ["PT0.123456789S", 123n],
    ["pt10s", 10_000n],
    ["PT0S", 0n],
  ])("reads %s as %s ms", (text, ms) => {
    expect(parseIsoDuration(text)).toBe(ms);
  });

  it("does not overflow for durations beyond 2^53 ms", () => {
    expect(parseIsoDuration("P999999999999D")).toBe(999_999_999_999n * 86_400_000n);
  });

  it.each(["P", "PT", "P1DT", "P1Y", "P1M", "P1W", "-PT1H", "PT-1H", "1H", "PT1.S", ""])(
    "refuses %s, naming the flag",
    (text) => {
      expect(() => parseIsoDuration(text)).toThrow(/--by-duration: .* is not an ISO-8601 duration/);
    },
  );

  it("counts back from now and stops at 1970", () => {
    expect(timestampBefore(10_000, 4_000n)).toBe(6_000);
    expect(timestampBefore(10_000, 999_999_999_999_999_999n)).toBe(0);
  });
});
