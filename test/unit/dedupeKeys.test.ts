import { describe, expect, it } from "vitest";
import { extractEventId, valueDigest } from "../../src/engine/dedupeKeys.js";
import { PermanentRecordError } from "../../src/errors.js";
import type { KafkaRecord } from "../../src/record.js";

const rec = (value: string | null, headers: Record<string, (Buffer | null)[]> = {}): KafkaRecord => ({
  topic: "t",
  partition: 0,
  offset: "0",
  timestamp: "0",
  key: null,
  value: value === null ? null : Buffer.from(value),
  headers,
});

describe("extractEventId", () => {
  it("regression: a null-valued id header (length -1 on the wire) is no id: EVENT_ID_MISSING, not a TypeError", () => {
    const byHeader = { kind: "event-id", header: "ce_id" } as const;
    expect(() => extractEventId(rec("{}", { ce_id: [null] }), byHeader)).toThrow(/null value/);
    expect(() => extractEventId(rec("{}", { ce_id: [null] }), byHeader)).toThrow(PermanentRecordError);
    // Repeated with a null among the values: different values, so no single id.
    expect(() => extractEventId(rec("{}", { ce_id: [Buffer.from("a"), null] }), byHeader)).toThrow(
      /different values/,
    );
    expect(() => extractEventId(rec("{}", { ce_id: [null, Buffer.from("a")] }), byHeader)).toThrow(
      /different values/,
    );
  });

  it("reads no id from Object.prototype: a header named toString or constructor is absent", () => {
    for (const header of ["toString", "constructor", "__proto__"]) {
      expect(() => extractEventId(rec("{}"), { kind: "event-id", header })).toThrow(/record has no header/);
    }
  });

  it("regression: a value that is not JSON under field dedupe is DECODE_FAILED with the parser's message, not EVENT_ID_MISSING", () => {
    let thrown: unknown;
    try {
      extractEventId(rec("not json"), { kind: "event-id", field: "id" });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PermanentRecordError);
    const error = thrown as PermanentRecordError;
    expect(error.code).toBe("DECODE_FAILED");
    let parserMessage = "";
    try {
      JSON.parse("not json");
    } catch (e) {
      parserMessage = (e as Error).message;
    }
    expect(error.message).toContain(`value is not JSON (${parserMessage})`);
    // A tombstone has no value to decode: its id is what is missing.
    expect(() => extractEventId(rec(null), { kind: "event-id", field: "id" })).toThrow(
      expect.objectContaining({ code: "EVENT_ID_MISSING" }) as Error,
    );
  });

  it("regression: a value that is not valid UTF-8 under field dedupe is DECODE_FAILED, not an id with U+FFFD that a valid record would then reuse", () => {
    // {"id":"f8<0xFF>"}: decoded lossily it would read as the id "f8\uFFFD", which the valid record
    // {"id":"f8\uFFFD"} then met as EVENT_ID_REUSED (break-it review).
    const bytes = Buffer.concat([Buffer.from('{"id":"f8'), Buffer.from([0xff]), Buffer.from('"}')]);
    const broken: KafkaRecord = { ...rec(null), value: bytes };
    expect(() => extractEventId(broken, { kind: "event-id", field: "id" })).toThrow(
      expect.objectContaining({
        code: "DECODE_FAILED",
        message: expect.stringMatching(/not valid UTF-8/) as string,
      }) as Error,
    );
    expect(extractEventId(rec('{"id":"f8\uFFFD"}'), { kind: "event-id", field: "id" })).toBe("f8\uFFFD");
  });

  it("keeps ids exactly as sent: leading zeros and values above 2^53", () => {
    expect(extractEventId(rec('{"id":"000123"}'), { kind: "event-id", field: "id" })).toBe("000123");
    expect(extractEventId(rec('{"id":"9007199254740993"}'), { kind: "event-id", field: "id" })).toBe(
      "9007199254740993",
    );
    expect(
      extractEventId(rec("{}", { ce_id: [Buffer.from("0042")] }), { kind: "event-id", header: "ce_id" }),
    ).toBe("0042");
  });

  it("refuses a numeric id, a missing id and a header that is not UTF-8", () => {
    expect(() => extractEventId(rec('{"id":9007199254740993}'), { kind: "event-id", field: "id" })).toThrow(
      /JSON number; send it as a string/,
    );
    expect(() => extractEventId(rec("{}"), { kind: "event-id", field: "id" })).toThrow(PermanentRecordError);
    expect(() => extractEventId(rec(null), { kind: "event-id", field: "id" })).toThrow(/null value/);
    expect(() =>
      extractEventId(rec("{}", { ce_id: [Buffer.from([0xff, 0xfe])] }), {
        kind: "event-id",
        header: "ce_id",
      }),
    ).toThrow(/not valid UTF-8/);
  });

  it("refuses a header sent twice with different values (which one is the id is unknowable) and takes a repeated equal one", () => {
    const key = { kind: "event-id", header: "ce_id" } as const;
    expect(() => extractEventId(rec("{}", { ce_id: [Buffer.from("a"), Buffer.from("b")] }), key)).toThrow(
      /header ce_id is sent 2 times with different values/,
    );
    expect(extractEventId(rec("{}", { ce_id: [Buffer.from("a"), Buffer.from("a")] }), key)).toBe("a");
  });

  it("digests values so a redelivery and a reused id differ", () => {
    // SHA-256("a"), as 64 lowercase hex digits (FIPS 180-4; the same as `printf a | sha256sum`).
    expect(valueDigest(rec("a"))).toBe("ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb");
    expect(valueDigest(rec("a"))).toBe(valueDigest(rec("a")));
    expect(valueDigest(rec("b"))).not.toBe(valueDigest(rec("a")));
    expect(valueDigest(rec(null))).toBeNull();
  });
});

describe("text PostgreSQL cannot store exactly (regression: lone surrogates became U+FFFD and collided)", () => {
  it("refuses an event id with a lone surrogate or a NUL", () => {
    expect(() => extractEventId(rec('{"id":"gh-\\ud800"}'), { kind: "event-id", field: "id" })).toThrow(
      /lone UTF-16 surrogate/,
    );
    expect(() => extractEventId(rec('{"id":"gh-\\u0000"}'), { kind: "event-id", field: "id" })).toThrow(
      /NUL/,
    );
    expect(extractEventId(rec('{"id":"gh-\\ud83d\\ude00"}'), { kind: "event-id", field: "id" })).toBe(
      "gh-😀",
    );
  });
});
