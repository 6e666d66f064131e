/**
 * Headers as KafkaJS hands them over, through toRecord and recordBytes: a null-valued header
 * (length -1 on the wire, `new RecordHeader("k", null)` in Java) and a header named `__proto__`
 * (issue 26, items 1 and 4). Both used to stop the member: a TypeError on `null.length`, and a
 * headers object whose prototype the record replaced.
 */
import type { KafkaMessage } from "kafkajs";
import { describe, expect, it } from "vitest";
import { toRecord } from "../../src/kafka/toRecord.js";
import { headerCount, headerText, headerValues, recordBytes, type KafkaRecord } from "../../src/record.js";

/** A KafkaJS message whose headers object is `headers` as given (own properties, any names). */
function message(headers: Record<string, unknown>): KafkaMessage {
  return {
    key: Buffer.from("k"),
    value: Buffer.from("vv"),
    timestamp: "0",
    attributes: 0,
    offset: "7",
    headers,
  } as unknown as KafkaMessage;
}

/** An object with own enumerable properties exactly as listed (a literal `__proto__:` would set the prototype). */
function own(entries: [string, unknown][]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return object;
}

describe("record headers", () => {
  it("regression: keeps a null-valued header as null and counts only its name in recordBytes", () => {
    const record = toRecord(
      "t",
      0,
      message(
        own([
          ["trace", null],
          ["ce_id", Buffer.from("abc")],
        ]),
      ),
    );
    expect(record.headers.trace).toEqual([null]);
    expect(recordBytes(record)).toBe(1 + 2 + "trace".length + "ce_id".length + 3);
    expect(headerText(record, "trace")).toBeUndefined();
    expect(headerText(record, "ce_id")).toBe("abc");
  });

  it("keeps null among repeated values, in order", () => {
    const record = toRecord("t", 0, message(own([["h", [Buffer.from("a"), null, "b"]]])));
    expect(record.headers.h).toEqual([Buffer.from("a"), null, Buffer.from("b")]);
    expect(headerValues(record, "h")).toEqual([Buffer.from("a"), null, Buffer.from("b")]);
  });

  it("regression: a header named __proto__ stays a header and recordBytes stays a number", () => {
    const record = toRecord(
      "t",
      0,
      message(
        own([
          ["__proto__", Buffer.from("x")],
          ["constructor", Buffer.from("yy")],
        ]),
      ),
    );
    expect(Object.getPrototypeOf(record.headers)).toBeNull();
    expect(Object.keys(record.headers)).toEqual(["__proto__", "constructor"]);
    expect(headerValues(record, "__proto__")).toEqual([Buffer.from("x")]);
    expect(recordBytes(record)).toBe(1 + 2 + "__proto__".length + 1 + "constructor".length + 2);
  });

  it("reads no header from Object.prototype: toString, constructor and hasOwnProperty are absent", () => {
    // A record built by hand (a test, a projection's own code) with an ordinary object.
    const record: KafkaRecord = { ...toRecord("t", 0, message({})), headers: {} };
    for (const name of ["toString", "constructor", "hasOwnProperty", "__proto__"]) {
      expect(headerValues(record, name)).toEqual([]);
      expect(headerText(record, name)).toBeUndefined();
    }
    expect(recordBytes(record)).toBe(3);
  });

  it("counts header names in UTF-8 bytes", () => {
    const record = toRecord("t", 0, message(own([["é€", Buffer.from("")]])));
    expect(recordBytes(record)).toBe(1 + 2 + 2 + 3);
  });
});

describe("the size and header count toRecord carries", () => {
  it("equals what recordBytes and headerCount compute from the record's fields", () => {
    const headers = own([
      ["ce_id", Buffer.from("id-1")],
      ["é", [Buffer.from("a"), null, "bc"]],
      ["__proto__", "x"],
      ["empty", []],
    ]);
    const record = toRecord("t", 0, message(headers));
    // The same fields without the carried values (a plain object literal of them).
    const plain: KafkaRecord = {
      topic: record.topic,
      partition: record.partition,
      offset: record.offset,
      timestamp: record.timestamp,
      key: record.key,
      value: record.value,
      headers: record.headers,
    };
    expect(recordBytes(record)).toBe(recordBytes(plain));
    expect(headerCount(record)).toBe(headerCount(plain));
    // k + vv + ce_id(5)+id-1(4) + é(2)×3 + a + bc + __proto__(9)+x
    expect(recordBytes(record)).toBe(3 + 9 + 6 + 1 + 2 + 10);
    expect(headerCount(record)).toBe(5);
  });
});

describe("the headers object toRecord keeps", () => {
  it("takes KafkaJS's own headers object (no prototype, patch 007) with its values as arrays in place", () => {
    const given = Object.create(null) as Record<string, unknown>;
    given.ce_id = Buffer.from("id-1");
    given.h = [Buffer.from("a"), null];
    given.gone = undefined;
    const repeated = given.h;
    const record = toRecord("t", 0, message(given));
    expect(record.headers).toBe(given);
    expect(Object.getPrototypeOf(record.headers)).toBeNull();
    expect(Object.keys(record.headers)).toEqual(["ce_id", "h"]);
    expect(record.headers.ce_id).toEqual([Buffer.from("id-1")]);
    // An array of Buffers and nulls is KafkaJS's, used as it is.
    expect(record.headers.h).toBe(repeated);
    // A second conversion of the same message gives the same record.
    expect(toRecord("t", 0, message(given)).headers).toEqual(record.headers);
    expect(recordBytes(record)).toBe(3 + 5 + 4 + 1 + 1 + 1);
  });

  it("copies a headers object with a prototype and leaves it as it was", () => {
    const given = own([
      ["ce_id", Buffer.from("id-1")],
      ["s", "text"],
    ]);
    const record = toRecord("t", 0, message(given));
    expect(record.headers).not.toBe(given);
    expect(Object.getPrototypeOf(record.headers)).toBeNull();
    expect(given.ce_id).toEqual(Buffer.from("id-1"));
    expect(given.s).toBe("text");
    expect(record.headers.s).toEqual([Buffer.from("text")]);
  });

  it("converts an array holding a string into a new array of Buffers", () => {
    const given = Object.create(null) as Record<string, unknown>;
    const values = [Buffer.from("a"), "b"];
    given.h = values;
    const record = toRecord("t", 0, message(given));
    expect(record.headers.h).toEqual([Buffer.from("a"), Buffer.from("b")]);
    expect(values[1]).toBe("b");
  });
});
