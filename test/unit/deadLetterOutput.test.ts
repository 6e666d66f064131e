import { afterEach, describe, expect, it } from "vitest";
import { bytesView, letterJson, listRow, parseTimeFlag, showText } from "../../src/cli/deadLetterOutput.js";
import { ReplayableError } from "../../src/errors.js";
import { clearSecrets, registerSecret } from "../../src/secrets/secrets.js";
import type { DeadLetter } from "../../src/sql/selectDeadLetters.js";

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

  // Regression (review finding): a date that does not exist rolled over (2026-02-30 meant
  // 2026-03-02), and a duration past the Date range went to PostgreSQL as "0NaN-NaN-…".
  it.each([
    "yesterday",
    "2026-13-45",
    "-5m",
    "5 minutes",
    "2026/01/31",
    "2026-02-30",
    "2026-02-29T10:00:00Z",
    "2026-04-31T00:00:00+02:00",
    "2026-01-31T24:00:00Z",
    "2026-01-31T12:60:00Z",
    "99999999999999d",
    "3000000d",
    "9999999999999999999999s",
  ])("refuses %s, naming the flag", (value) => {
    expect(() => parseTimeFlag("--until", value, now)).toThrow(ReplayableError);
    expect(() => parseTimeFlag("--until", value, now)).toThrow(
      /^--until: ".*" is not a time; give an ISO-8601 date-time/,
    );
  });
});

describe("dead-letter output of hostile records and secrets (issue 26 items 6 and 10)", () => {
  const esc = "\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e";
  const letter: DeadLetter = {
    id: "7",
    projection: "orders",
    record: {
      topic: "orders",
      partition: 0,
      offset: "12",
      timestamp: "0",
      key: Buffer.from(`k${esc}`),
      value: Buffer.from(`{"a":"${esc}`),
      headers: { [`h${esc}`]: [Buffer.from(`v${esc}`)] },
    },
    errorCode: "DECODE_FAILED",
    errorMessage: `Unexpected token '${esc}' in JSON\nnext line; password postgres://u:hunter2@db/x and s3cr3t-pw`,
    attempts: 1,
    createdAt: new Date(0),
    lastAttemptAt: null,
    publishedAt: null,
    resolvedAt: null,
    resolution: null,
    resolvedBy: null,
    bytesDeletedAt: null,
  };
  // eslint-disable-next-line no-control-regex
  const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

  afterEach(() => clearSecrets());

  it("list and show print no control character, whatever the record and its error message hold", () => {
    for (const cell of Object.values(listRow(letter))) expect(String(cell)).not.toMatch(CONTROL);
    for (const line of showText(letter).split("\n")) expect(line).not.toMatch(CONTROL);
    expect(showText(letter)).toContain("\\x1b]0;pwned\\x07");
  });

  it("list, show and JSON output hide secrets in the error message", () => {
    registerSecret("s3cr3t-pw");
    const texts = [
      JSON.stringify(listRow(letter)),
      showText(letter),
      JSON.stringify(letterJson(letter, true)),
    ];
    for (const text of texts) {
      expect(text).not.toContain("hunter2");
      expect(text).not.toContain("s3cr3t-pw");
    }
  });

  it("JSON output stays JSON and keeps the bytes exact (C0 escaped by JSON itself)", () => {
    const json = JSON.stringify(letterJson(letter, true));
    const parsed = JSON.parse(json) as { key: { data: string } };
    expect(parsed.key.data).toBe(`k${esc}`);
    // eslint-disable-next-line no-control-regex
    expect(json).not.toMatch(/[\u0000-\u001f]/);
  });
});
