/**
 * A dead letter keeps the record's headers exactly: null values, names that are Object.prototype's
 * own (`__proto__`, `constructor`), names with control characters and U+0000 (which a PostgreSQL
 * jsonb key cannot hold), repeated names, any bytes (issue 26, items 1 and 4).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KafkaRecord } from "../../../src/record.js";
import { insertDeadLetter } from "../../../src/sql/insertDeadLetter.js";
import { selectDeadLetters } from "../../../src/sql/selectDeadLetters.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase(false);
});

afterAll(async () => {
  await db?.drop();
});

/** A headers object without a prototype holding exactly `entries`, in order. */
function headersOf(entries: [string, (Buffer | null)[]][]): KafkaRecord["headers"] {
  const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
  for (const [name, values] of entries) headers[name] = values;
  return headers;
}

function recordWith(topic: string, headers: KafkaRecord["headers"]): KafkaRecord {
  return {
    topic,
    partition: 0,
    offset: "5",
    timestamp: "1767225600000",
    key: null,
    value: Buffer.from([0, 255, 27]),
    headers,
  };
}

async function roundTrip(record: KafkaRecord): Promise<KafkaRecord> {
  await insertDeadLetter(db.pool as never, "p", record, "DECODE_FAILED", "bad");
  const [letter] = await selectDeadLetters(db.pool, { topic: record.topic });
  return letter!.record;
}

describe("dead-letter headers", () => {
  it("regression: keeps a null header value as null", async () => {
    const topic = uniqueName("t");
    const headers = headersOf([
      ["trace", [null]],
      ["h", [Buffer.from("a"), null, Buffer.alloc(0)]],
    ]);
    const back = await roundTrip(recordWith(topic, headers));
    expect(back.headers.trace).toEqual([null]);
    expect(back.headers.h).toEqual([Buffer.from("a"), null, Buffer.alloc(0)]);
  });

  it("regression: keeps a header named __proto__ (and constructor) as a header", async () => {
    const topic = uniqueName("t");
    const headers = headersOf([
      ["__proto__", [Buffer.from("p")]],
      ["constructor", [Buffer.from("c")]],
    ]);
    const back = await roundTrip(recordWith(topic, headers));
    expect(Object.getPrototypeOf(back.headers)).toBeNull();
    expect(Object.keys(back.headers).sort()).toEqual(["__proto__", "constructor"]);
    expect(back.headers.__proto__).toEqual([Buffer.from("p")]);
    const stored = await db.pool.query<{ names: string[] }>(
      `SELECT array(SELECT jsonb_object_keys(headers)) AS names FROM replayable.dead_letters WHERE topic = $1`,
      [topic],
    );
    expect(stored.rows[0]!.names.sort()).toEqual(["__proto__", "constructor"]);
  });

  it("regression: stores a header whose name holds U+0000 and control characters", async () => {
    const topic = uniqueName("t");
    const headers = headersOf([
      ["a\u0000b", [Buffer.from("x")]],
      ["\u001b[31mred", [null]],
      ["plain", [Buffer.from("y")]],
    ]);
    const back = await roundTrip(recordWith(topic, headers));
    expect(Object.keys(back.headers)).toEqual(["a\u0000b", "\u001b[31mred", "plain"]);
    expect(back.headers["a\u0000b"]).toEqual([Buffer.from("x")]);
    expect(back.headers["\u001b[31mred"]).toEqual([null]);
  });
});

describe("dead-letter timestamps", () => {
  it("regression: a record timestamp outside PostgreSQL's range (before 4714 BC; Kafka accepts any past CreateTime) is stored, not a failed insert that stops the partition", async () => {
    const topic = uniqueName("t");
    const record = { ...recordWith(topic, headersOf([])), timestamp: "-9000000000000000" };
    await insertDeadLetter(db.pool as never, "p", record, "DECODE_FAILED", "bad");
    const [letter] = await selectDeadLetters(db.pool, { topic });
    expect(letter!.record.value).toEqual(record.value);
    expect(letter!.record.timestamp).toBe("-1");
    expect(letter!.errorMessage).toContain("-9000000000000000");
  });
});
