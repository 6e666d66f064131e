/**
 * Decodes the records of a record batch that KafkaJS handed over as bytes (patch 012,
 * patches/README.md) straight into the engine's records: no KafkaJS message, `Long`, `Decoder` or
 * per-record `Buffer` copy in between (issue 27, "A leaner apply path"; measured in
 * docs/benchmarks.md "What the member adds, taken apart").
 *
 * The format is message format v2's record (KIP-98, "Record"; Kafka's `DefaultRecord`):
 * `length varint, attributes int8, timestampDelta varlong, offsetDelta varint, key varint-bytes,
 * value varint-bytes, headers varint-count × (name varint-string, value varint-bytes)`, each varint a
 * zigzag one (protobuf's encoding). Offsets and timestamps are computed as `bigint` and kept as
 * base-10 strings, never as `number`.
 */
import { ReplayableError } from "../errors.js";
import type { SizedRecord } from "../record.js";
import { FetchedRecord } from "./toRecord.js";

/** A record batch as patch 012 hands it over (KafkaJS's message `recordBatch`). */
export interface RecordBatchBytes {
  /** The batch's base offset (a base-10 string): each record's offset is it + the record's offset delta. */
  readonly firstOffset: string;
  /** Ms since the epoch (a string): each record's timestamp is it + the record's timestamp delta. */
  readonly firstTimestamp: string;
  /** Ms since the epoch (a string): every record's timestamp when `logAppendTime`. */
  readonly maxTimestamp: string;
  /** Timestamp type LogAppendTime (KIP-32): the broker's append time, the batch's max timestamp. */
  readonly logAppendTime: boolean;
  /** The number of records. */
  readonly count: number;
  /** The records, decompressed, exactly `count` of them. */
  readonly records: Buffer;
}

/** The first and last record's offsets of a batch (base-10 strings), and how many records it holds. */
export interface RecordBatchBounds {
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly count: number;
}

/**
 * The offsets of the batch's first and last record, read without decoding the records between
 * (each record's length is read to step over it). They differ from the batch's base and last
 * offsets when compaction removed records at either end.
 * @throws ReplayableError KAFKA when the records' lengths do not add up to the bytes given, or
 *   their count is not `count`.
 */
export function recordBatchBounds(batch: RecordBatchBytes): RecordBatchBounds {
  const reader = new Reader(batch);
  const first = reader.at;
  let last = first;
  for (let r = 0; r < batch.count; r++) {
    last = reader.at;
    reader.at = reader.recordEnd(r);
  }
  reader.expectEnd();
  const base = BigInt(batch.firstOffset);
  return {
    firstOffset: (base + BigInt(reader.offsetDeltaAt(first))).toString(),
    lastOffset: (base + BigInt(reader.offsetDeltaAt(last))).toString(),
    count: batch.count,
  };
}

/**
 * The batch's records, in offset order, as the engine's records of `topic`/`partition`: the same
 * fields and sizes {@link toRecord} gives for KafkaJS's messages (headers without a prototype, each
 * name's values in order, a null value kept as `null`; header names counted as the UTF-8 of their
 * decoded text, as `recordBytes` in src/record.ts does), with keys, values and header values as views of
 * `batch.records` (no copy). A record's header names are the previous record's strings when their
 * bytes are the same (a batch's records mostly carry the same names).
 * @throws ReplayableError KAFKA when a record's fields do not fit its length or the bytes given.
 */
export function decodeRecordBatch(topic: string, partition: number, batch: RecordBatchBytes): SizedRecord[] {
  const reader = new Reader(batch);
  const base = BigInt(batch.firstOffset);
  const firstTimestamp = BigInt(batch.firstTimestamp);
  const records = new Array<SizedRecord>(batch.count);
  let names: string[] = [];
  for (let r = 0; r < batch.count; r++) {
    const end = reader.recordEnd(r);
    reader.at += 1; // the record's attributes: unused (KIP-98)
    const timestampDelta = reader.varlong();
    const timestamp = batch.logAppendTime ? batch.maxTimestamp : (firstTimestamp + timestampDelta).toString();
    const offset = (base + BigInt(reader.varint())).toString();
    const key = reader.bytes();
    const value = reader.bytes();
    const headerCount = reader.varint();
    if (headerCount < 0) throw reader.malformed(r, `a header count of ${headerCount}`);
    const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
    const these = new Array<string>(headerCount);
    let size = (key?.length ?? 0) + (value?.length ?? 0);
    for (let h = 0; h < headerCount; h++) {
      const nameBytes = reader.varint();
      if (nameBytes < 0) throw reader.malformed(r, "a header name of negative length");
      const name = reader.name(nameBytes, names[h]);
      these[h] = name;
      const headerValue = reader.bytes();
      const values = headers[name];
      if (values === undefined) headers[name] = [headerValue];
      else values.push(headerValue);
      // The name's UTF-8 bytes, as recordBytes counts them (src/record.ts): its bytes on the wire,
      // unless they are not UTF-8 (each invalid byte became U+FFFD). A reused name is ASCII.
      size += (reader.nameReused ? nameBytes : Buffer.byteLength(name, "utf8")) + (headerValue?.length ?? 0);
    }
    names = these;
    if (reader.at !== end)
      throw reader.malformed(r, `its fields end ${reader.at - end} bytes past its length`);
    records[r] = new FetchedRecord(
      topic,
      partition,
      offset,
      timestamp,
      key,
      value,
      headers,
      size,
      headerCount,
    );
  }
  reader.expectEnd();
  return records;
}

/** A read position in a batch's records, with bounds checks; every read past the end throws. */
class Reader {
  at = 0;
  /** True when the last {@link name} returned the previous record's string: ASCII, its UTF-8 is its bytes. */
  nameReused = false;
  private readonly buffer: Buffer;

  constructor(private readonly batch: RecordBatchBytes) {
    this.buffer = batch.records;
  }

  /** Reads record `r`'s length at the position and returns where the record ends. */
  recordEnd(r: number): number {
    const length = this.varint();
    const end = this.at + length;
    if (length < 1 || end > this.buffer.length)
      throw this.malformed(r, `a length of ${length} with ${this.buffer.length - this.at} bytes left`);
    return end;
  }

  /** The offset delta of the record that begins at `start` (its length, attributes, timestamp delta before it). */
  offsetDeltaAt(start: number): number {
    this.at = start;
    this.varint();
    this.at += 1;
    this.varlong();
    return this.varint();
  }

  /** A zigzag varint of at most 32 bits (5 bytes). */
  varint(): number {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.byte();
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return (result >>> 1) ^ -(result & 1);
    }
    throw this.malformed(undefined, "a varint longer than 5 bytes");
  }

  /** A zigzag varlong of at most 64 bits (10 bytes), as a bigint. */
  varlong(): bigint {
    // Most deltas fit 28 bits (4 bytes): read those as a number first.
    let small = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      const byte = this.byte();
      small |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return BigInt((small >>> 1) ^ -(small & 1));
    }
    let result = BigInt(small);
    for (let shift = 28n; shift < 70n; shift += 7n) {
      const byte = this.byte();
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return BigInt.asIntN(64, (result >> 1n) ^ -(result & 1n));
    }
    throw this.malformed(undefined, "a varlong longer than 10 bytes");
  }

  /** Varint-length bytes as a view, or null for length -1. */
  bytes(): Buffer | null {
    const length = this.varint();
    if (length === -1) return null;
    const start = this.at;
    this.at += length;
    if (length < -1 || this.at > this.buffer.length)
      throw this.malformed(undefined, `a field of ${length} bytes with ${this.buffer.length - start} left`);
    return this.buffer.subarray(start, this.at);
  }

  /** A header name of `length` bytes (UTF-8): `previous` itself when its bytes are the same (ASCII), else decoded. */
  name(length: number, previous: string | undefined): string {
    const start = this.at;
    this.at += length;
    if (this.at > this.buffer.length)
      throw this.malformed(
        undefined,
        `a header name of ${length} bytes with ${this.buffer.length - start} left`,
      );
    if (previous?.length === length) {
      let same = true;
      // Only ASCII bytes: a byte of 0x80 or more is part of a multi-byte character (or invalid UTF-8).
      for (let i = 0; i < length && same; i++) {
        const byte = this.buffer[start + i]!;
        same = byte < 0x80 && byte === previous.charCodeAt(i);
      }
      if (same) {
        this.nameReused = true;
        return previous;
      }
    }
    this.nameReused = false;
    return this.buffer.toString("utf8", start, this.at);
  }

  /** Throws unless every byte was read. */
  expectEnd(): void {
    if (this.at !== this.buffer.length)
      throw this.malformed(undefined, `${this.buffer.length - this.at} bytes after its last record`);
  }

  private byte(): number {
    const byte = this.buffer[this.at++];
    if (byte === undefined) throw this.malformed(undefined, "its records end early");
    return byte;
  }

  malformed(record: number | undefined, what: string): ReplayableError {
    const which = record === undefined ? "" : ` (record ${record} of ${this.batch.count})`;
    return new ReplayableError(
      "KAFKA",
      `the record batch at offset ${this.batch.firstOffset} is malformed${which}: ${what}`,
      { context: { firstOffset: this.batch.firstOffset, count: this.batch.count } },
    );
  }
}
