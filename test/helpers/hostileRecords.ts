/**
 * fast-check arbitraries of Kafka records as a hostile (or merely unusual) producer can send them,
 * at the wire level: key and value bytes or null, headers as (name bytes, value bytes or null) in
 * order. Names include `__proto__`, `constructor`, `toString`, control characters, U+0000 and
 * invalid UTF-8; values null, empty and binary; some records carry thousands of headers, keys too
 * long to index and values at and over the size limit. Records are turned into what the consumer
 * sees by the same code the consumer runs: KafkaJS's record decoder (patched) and toRecord.
 */
import { createRequire } from "node:module";
import fc from "fast-check";
import type { KafkaMessage } from "kafkajs";
import { toRecord } from "../../src/kafka/toRecord.js";
import type { KafkaRecord } from "../../src/record.js";

const require = createRequire(import.meta.url);

interface EncoderInstance {
  writeInt8(v: number): EncoderInstance;
  writeVarInt(v: number): EncoderInstance;
  writeVarLong(v: number): EncoderInstance;
  writeVarIntBytes(v: Buffer | null): EncoderInstance;
  readonly buffer: Buffer;
}
const Encoder = require("kafkajs/src/protocol/encoder.js") as new () => EncoderInstance;
const Decoder = require("kafkajs/src/protocol/decoder.js") as new (b: Buffer) => unknown;
const decodeRecord = require("kafkajs/src/protocol/recordBatch/record/v0/decoder.js") as (
  decoder: unknown,
  context: object,
) => KafkaMessage;

/** A record as bytes on the wire (message format v2): header names are raw bytes too. */
export interface WireRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly (readonly [Buffer, Buffer | null])[];
}

/** The size limit the fuzz tests run with (REPLAYABLE_MAX_RECORD_BYTES), bytes: small, so records reach it. */
export const FUZZ_MAX_RECORD_BYTES = 8192;
/** The header limit the fuzz tests run with (REPLAYABLE_MAX_RECORD_HEADERS). */
export const FUZZ_MAX_RECORD_HEADERS = 200;

const utf8 = (text: string) => Buffer.from(text, "utf8");
const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((a) => Buffer.from(a));

/** Header names: Object.prototype's own, the projections' own, control characters, U+0000, invalid UTF-8. */
const headerName: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .constantFrom(
      "__proto__",
      "constructor",
      "toString",
      "hasOwnProperty",
      "valueOf",
      "",
      "ce_id",
      "ce_type",
      "ce_specversion",
      "replayable.error.code",
      "a\u0000b",
      "\u001b[2J\u001b[31m",
      "\r\n\t\u0007\u009b",
      "\u202e",
    )
    .map(utf8),
  fc.string({ unit: "binary", maxLength: 12 }).map(utf8),
  bytes(12),
);

/** Header values: null (length -1), empty, binary, text a projection reads, long. */
const headerValue: fc.Arbitrary<Buffer | null> = fc.oneof(
  fc.constant(null),
  fc.constant(Buffer.alloc(0)),
  bytes(16),
  fc.constantFrom("1.0", "ledger.account.credited", "x", "\u0000", "\u001b]0;pwned\u0007").map(utf8),
  fc.string({ unit: "binary", minLength: 500, maxLength: 700 }).map(utf8),
);

const header = fc.tuple(headerName, headerValue);

/** Mostly a few headers; sometimes more than {@link FUZZ_MAX_RECORD_HEADERS}, sometimes thousands. */
const headers = fc.oneof(
  { weight: 8, arbitrary: fc.array(header, { maxLength: 6 }) },
  {
    weight: 1,
    arbitrary: fc.array(header, {
      minLength: FUZZ_MAX_RECORD_HEADERS - 2,
      maxLength: FUZZ_MAX_RECORD_HEADERS + 2,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.array(fc.tuple(bytes(3), fc.constant(null)), { minLength: 1000, maxLength: 2000 }),
  },
);

/** A value of exactly `size` bytes of JSON-ish text. */
const sized = (size: number) => Buffer.alloc(size, "a");

/** Keys: null, empty, text, binary, too long for a btree index (random, so incompressible). */
const key: fc.Arbitrary<Buffer | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
  { weight: 6, arbitrary: fc.constantFrom("a", "b", "acc-1", "42", "__proto__").map(utf8) },
  { weight: 2, arbitrary: bytes(24) },
  {
    weight: 1,
    arbitrary: fc
      .uint8Array({ minLength: 4000, maxLength: 4000 })
      .map((a) => utf8(Buffer.from(a).toString("base64"))),
  },
);

/** A value a projection may apply, or not quite. */
const jsonValue: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .constantFrom(
      { account: "acc-1", amount: 5 },
      { account: "acc-1", amount: -1 },
      { account: "\u0000", amount: 1 },
      { id: "1", type: "PushEvent", repo: "r", actor: "a", payload: { size: 2 } },
      { id: "2", type: "WatchEvent", repo: "r", actor: "\u001b[31m" },
      { name: "n", n: 7 },
      { name: "\u0000", n: 1e300 },
    )
    .map((v) => utf8(JSON.stringify(v))),
  fc.constant(utf8('{"__proto__":{"amount":1},"constructor":"c","toString":2,"account":"acc-1","amount":1}')),
  fc.json({ maxDepth: 3 }).map(utf8),
);

/** Values: null, empty, binary, JSON, nested deeper than any parser's stack, at and over the size limit. */
const value: fc.Arbitrary<Buffer | null> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
  { weight: 2, arbitrary: bytes(32) },
  { weight: 6, arbitrary: jsonValue },
  { weight: 1, arbitrary: fc.constant(utf8(`{"name":${"[".repeat(5000)}${"]".repeat(5000)}}`)) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(FUZZ_MAX_RECORD_BYTES - 64, FUZZ_MAX_RECORD_BYTES, FUZZ_MAX_RECORD_BYTES + 1)
      .map(sized),
  },
);

/** A record a hostile producer can send. */
export const wireRecord: fc.Arbitrary<WireRecord> = fc.record({ key, value, headers });

/**
 * A record the ledger, github and upsert projections can apply, with hostile headers added: so
 * that the fuzz applies records as well as dead-lettering them.
 */
export const applicableRecord: fc.Arbitrary<WireRecord> = fc
  .record({
    id: fc.uuid(),
    extra: headers,
    kind: fc.constantFrom("ledger", "github", "upsert"),
    key: fc.oneof({ weight: 4, arbitrary: fc.constant(utf8("k1")) }, { weight: 1, arbitrary: key }),
    // Padding that brings the value to the size limit, or over it.
    pad: fc.oneof(
      { weight: 6, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.constantFrom(FUZZ_MAX_RECORD_BYTES - 400, FUZZ_MAX_RECORD_BYTES) },
    ),
  })
  .map(({ id, extra, kind, key, pad }) => {
    const cloudEvents: [Buffer, Buffer | null][] = [
      [utf8("ce_specversion"), utf8("1.0")],
      [utf8("ce_id"), utf8(id)],
      [utf8("ce_type"), utf8("ledger.account.credited")],
    ];
    const fields =
      kind === "ledger"
        ? { account: "acc-1", amount: 3 }
        : kind === "github"
          ? { id, type: "PushEvent", repo: "r/r", actor: "a", payload: { size: 1 } }
          : { name: "n", n: 1, trace: { nested: [[[1]]] } };
    const value = pad > 0 ? { ...fields, pad: "p".repeat(pad) } : fields;
    // The extra headers after the CloudEvents ones: a repeated ce_id among them makes the id ambiguous.
    return { key, value: utf8(JSON.stringify(value)), headers: [...cloudEvents, ...extra] };
  });

/** Records for one batch: hostile ones and applicable ones mixed. */
export const batch = (maxLength: number): fc.Arbitrary<WireRecord[]> =>
  fc.array(fc.oneof(wireRecord, applicableRecord), { minLength: 1, maxLength });

/** The record's bytes as a Java producer writes them (message format v2), without the length prefix. */
export function encodeWire(record: WireRecord): Buffer {
  const e = new Encoder()
    .writeInt8(0)
    .writeVarLong(0)
    .writeVarInt(0)
    .writeVarIntBytes(record.key)
    .writeVarIntBytes(record.value)
    .writeVarInt(record.headers.length);
  for (const [name, v] of record.headers) e.writeVarIntBytes(name).writeVarIntBytes(v);
  return e.buffer;
}

/**
 * What the consumer makes of `record` at `offset`: KafkaJS's record decoder, then toRecord, as the
 * fetch path runs them.
 */
export function consumed(topic: string, offset: number, record: WireRecord): KafkaRecord {
  const message = decodeRecord(new Decoder(encodeWire(record)), {
    firstOffset: String(offset),
    firstTimestamp: "1767225600000",
    magicByte: 2,
  });
  return toRecord(topic, 0, message);
}

/** The headers `record` must arrive with: names as UTF-8 text (as KafkaJS decodes them), values in order. */
export function expectedHeaders(record: WireRecord): Map<string, (Buffer | null)[]> {
  const expected = new Map<string, (Buffer | null)[]>();
  for (const [name, v] of record.headers) {
    const text = name.toString("utf8");
    expected.set(text, [...(expected.get(text) ?? []), v]);
  }
  return expected;
}

/** `headers` as a Map of own properties, for comparison. */
export function headerMap(headers: KafkaRecord["headers"]): Map<string, (Buffer | null)[]> {
  return new Map(Object.keys(headers).map((name) => [name, [...headers[name]!]]));
}
