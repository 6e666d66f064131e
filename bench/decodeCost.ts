/**
 * What decoding a fetched record costs the member today (KafkaJS's record-batch decoder, then
 * toRecord) against a decode that reads the record batch's bytes straight into the engine's record
 * shape (issue 27's "a leaner apply path", docs/benchmarks.md "What a decode of our own would save").
 * The lean decode here is a measuring prototype, not a decoder: uncompressed magic-2 batches with
 * CreateTime only, no control or transactional batches, no bounds checks. It reuses the previous
 * record's header name strings when the bytes match, computes offsets with `bigint` and gives the same
 * records (checked against KafkaJS's on one batch before timing).
 *
 * Batches of 800 ledger-like records (a key, a value of `--value-bytes`, the four CloudEvents
 * headers) are encoded with KafkaJS's own encoder; each variant decodes all of them `rounds` times
 * after a warm-up. Reports the process's CPU per record (GC included). No broker.
 * Run: `node --import tsx bench/decodeCost.ts 200 700 4096`.
 */
import { toRecord } from "../src/kafka/toRecord.js";
import { decodeMessages, Decoder, Encoder, Long, Record, RecordBatch } from "./kafkajsInternals.js";

const RECORDS = 800;
const BATCHES = 50;
/** Bytes of a record batch's header before its records (KIP-98): offsets, length, epoch, magic, CRC, … count. */
const BATCH_HEADER_BYTES = 61;

async function encodedBatch(valueBytes: number, firstOffset: string): Promise<Buffer> {
  const records = Array.from({ length: RECORDS }, (_, i) =>
    Record({
      offsetDelta: i,
      timestampDelta: i,
      key: Buffer.from(`account-${i % 97}`),
      value: Buffer.alloc(valueBytes, "x"),
      headers: {
        ce_specversion: Buffer.from("1.0"),
        ce_id: Buffer.from(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}`),
        ce_source: Buffer.from("/replayable/produce"),
        ce_type: Buffer.from("ledger.account.credited"),
      },
    }),
  );
  const batch = await RecordBatch({
    firstOffset: Long.fromValue(firstOffset),
    lastOffsetDelta: RECORDS - 1,
    records,
  });
  return Buffer.from(new Encoder().writeBytes(batch.buffer).buffer);
}

/** The record shape toRecord builds (topic, partition, offset and timestamp strings, views, headers). */
class LeanRecord {
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly offset: string,
    readonly timestamp: string,
    readonly key: Buffer | null,
    readonly value: Buffer | null,
    readonly headers: Record<string, (Buffer | null)[]>,
    readonly bytes: number,
    readonly headerCount: number,
  ) {}
}

/** A read position in one buffer, and KIP-98's zigzag varints read from it. */
class Cursor {
  constructor(
    readonly bytes: Buffer,
    public at: number,
  ) {}

  /** A zigzag varint of at most 32 bits. */
  varint(): number {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = this.bytes[this.at++] ?? 0;
      result |= (byte & 0x7f) << shift;
      shift += 7;
    } while ((byte & 0x80) !== 0);
    return (result >>> 1) ^ -(result & 1);
  }

  /** A zigzag varlong, as a bigint. */
  varlong(): bigint {
    let result = 0n;
    let shift = 0n;
    let byte: number;
    do {
      byte = this.bytes[this.at++] ?? 0;
      result |= BigInt(byte & 0x7f) << shift;
      shift += 7n;
    } while ((byte & 0x80) !== 0);
    return (result >> 1n) ^ -(result & 1n);
  }

  /** `length` bytes as a view, or null for -1. */
  view(length: number): Buffer | null {
    if (length < 0) return null;
    const start = this.at;
    this.at += length;
    return this.bytes.subarray(start, this.at);
  }

  /** A header name of `length` bytes: `previous` itself when its bytes match (ASCII names), else decoded. */
  name(length: number, previous: string | undefined): string {
    const start = this.at;
    this.at += length;
    if (previous?.length === length) {
      let same = true;
      for (let i = 0; i < length && same; i++) same = this.bytes[start + i] === previous.charCodeAt(i);
      if (same) return previous;
    }
    return this.bytes.toString("utf8", start, this.at);
  }
}

/** Decodes one encoded batch (as {@link encodedBatch} writes it: an int32 length, then the batch). */
function leanDecode(topic: string, partition: number, encoded: Buffer): LeanRecord[] {
  const firstOffset = encoded.readBigInt64BE(4);
  const firstTimestamp = encoded.readBigInt64BE(4 + 27);
  const count = encoded.readInt32BE(4 + BATCH_HEADER_BYTES - 4);
  const cursor = new Cursor(encoded, 4 + BATCH_HEADER_BYTES);
  const records = new Array<LeanRecord>(count);
  let names: string[] = [];
  for (let r = 0; r < count; r++) {
    const end = cursor.varint() + cursor.at;
    cursor.at += 1; // record attributes: unused (KIP-98)
    const timestamp = (firstTimestamp + cursor.varlong()).toString();
    const offset = (firstOffset + BigInt(cursor.varint())).toString();
    const key = cursor.view(cursor.varint());
    const value = cursor.view(cursor.varint());
    const headerCount = cursor.varint();
    const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
    const these = new Array<string>(headerCount);
    let bytes = (key?.length ?? 0) + (value?.length ?? 0);
    for (let h = 0; h < headerCount; h++) {
      const nameBytes = cursor.varint();
      const name = cursor.name(nameBytes, names[h]);
      these[h] = name;
      const headerValue = cursor.view(cursor.varint());
      const values = headers[name];
      if (values === undefined) headers[name] = [headerValue];
      else values.push(headerValue);
      bytes += nameBytes + (headerValue?.length ?? 0);
    }
    names = these;
    if (cursor.at !== end)
      throw new Error(`record ${r}: its length says ${end}, its fields end at ${cursor.at}`);
    records[r] = new LeanRecord(topic, partition, offset, timestamp, key, value, headers, bytes, headerCount);
  }
  return records;
}

/** Throws unless both decodes give the same offsets, timestamps, keys, values and headers. */
async function checkSame(encoded: Buffer): Promise<void> {
  const theirs = (await decodeMessages(new Decoder(encoded))).map((m) => toRecord("t", 0, m));
  const ours = leanDecode("t", 0, encoded);
  const shape = (r: {
    offset: string;
    timestamp: string;
    key: Buffer | null;
    value: Buffer | null;
    headers: object;
  }) => JSON.stringify([r.offset, r.timestamp, r.key?.toString("hex"), r.value?.toString("hex"), r.headers]);
  if (theirs.length !== ours.length || theirs.some((r, i) => shape(r) !== shape(ours[i] as LeanRecord)))
    throw new Error("the lean decode differs from KafkaJS's");
}

async function measure(valueBytes: number): Promise<void> {
  const batches: Buffer[] = [];
  for (let i = 0; i < BATCHES; i++)
    batches.push(await encodedBatch(valueBytes, String(2 ** 40 + i * RECORDS)));
  await checkSame(batches[1] as Buffer);
  const rounds = Math.max(20, Math.round(4e6 / (RECORDS * BATCHES * (valueBytes / 200))));
  const variants: [string, () => Promise<unknown>][] = [
    [
      "KafkaJS + toRecord",
      async () => {
        for (const b of batches) (await decodeMessages(new Decoder(b))).map((m) => toRecord("t", 0, m));
      },
    ],
    [
      "KafkaJS alone",
      async () => {
        for (const b of batches) await decodeMessages(new Decoder(b));
      },
    ],
    // Each batch's records let go before the next, as in the variants above.
    [
      "lean",
      () => {
        for (const b of batches) leanDecode("t", 0, b);
        return Promise.resolve();
      },
    ],
  ];
  for (const [label, run] of variants) {
    for (let i = 0; i < 5; i++) await run();
    const before = process.cpuUsage();
    for (let i = 0; i < rounds; i++) await run();
    const used = process.cpuUsage(before);
    const perRecord = (used.user + used.system) / (rounds * RECORDS * BATCHES);
    process.stdout.write(`${valueBytes} B  ${label.padEnd(18)} ${perRecord.toFixed(2)} µs/record\n`);
  }
}

for (const arg of process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["200", "700", "4096"])
  await measure(Number(arg));
