/** The record shape the engine works on, independent of the Kafka client library. */

/**
 * One Kafka record as fetched: topic, partition, offset and the exact bytes.
 * `offset` is a base-10 string (64-bit; see offsets.ts). `timestamp` is ms since the epoch, as a string.
 * `headers` maps each header name to its values in order (Kafka headers may repeat, KIP-82). A value
 * is `null` when the producer sent a null header value (length -1 on the wire, e.g. Java's
 * `new RecordHeader("k", null)`): it is part of the record and is kept as `null`, never dropped.
 * Records built by {@link toRecord} (src/kafka/toRecord.ts) and read back from dead letters have a
 * headers object without a prototype (`Object.create(null)`), so any header name, `__proto__`
 * included, is an own property; read headers with {@link headerValues}, which looks at own
 * properties only.
 */
export interface KafkaRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, readonly (Buffer | null)[]>>;
}

const NO_VALUES: readonly (Buffer | null)[] = Object.freeze([]);

/**
 * The values of header `name` in the order sent (`null` for a null value), or an empty list when
 * the record has no such header. Own properties only: `toString` or `constructor` is never read
 * from `Object.prototype`.
 */
export function headerValues(record: KafkaRecord, name: string): readonly (Buffer | null)[] {
  return Object.hasOwn(record.headers, name) ? record.headers[name]! : NO_VALUES;
}

/**
 * The first value of header `name` as UTF-8, or undefined when the record has no such header or
 * its first value is null (a null value has no text).
 */
export function headerText(record: KafkaRecord, name: string): string | undefined {
  return headerValues(record, name)[0]?.toString("utf8");
}

/**
 * Where a record built by the Kafka adapter (src/kafka/toRecord.ts) keeps its {@link recordBytes}
 * and {@link headerCount}, computed once while its headers were converted: the engine asks for
 * them up to three times per record (planning, absorbing, the apply step's limits). Symbols, so
 * they are no part of the record a projection sees.
 */
export const RECORD_BYTES: unique symbol = Symbol("replayable.recordBytes");
export const RECORD_HEADER_COUNT: unique symbol = Symbol("replayable.headerCount");

/** A record that carries its size and header count (see {@link RECORD_BYTES}). */
export interface SizedRecord extends KafkaRecord {
  readonly [RECORD_BYTES]: number;
  readonly [RECORD_HEADER_COUNT]: number;
}

/**
 * Size of a record in bytes: key + value + header names and values, as on the wire without the
 * varint lengths. A null key, value or header value counts 0 bytes. A header name counts the UTF-8
 * bytes of its text: its bytes on the wire, unless those are not valid UTF-8 (each invalid byte
 * decodes to U+FFFD, 3 bytes). Every path that builds records counts so (src/kafka/toRecord.ts,
 * recordBatch.ts, platformatic/toRecord.ts, and this function for a record without
 * {@link RECORD_BYTES}), so a record's verdict against the size limit does not depend on the path.
 */
export function recordBytes(record: KafkaRecord): number {
  const known = (record as Partial<SizedRecord>)[RECORD_BYTES];
  if (known !== undefined) return known;
  let size = (record.key?.length ?? 0) + (record.value?.length ?? 0);
  // for…in, not Object.entries: this runs for every record, twice, and allocates nothing.
  for (const name in record.headers) {
    if (!Object.hasOwn(record.headers, name)) continue;
    const values = record.headers[name]!;
    const nameBytes = Buffer.byteLength(name, "utf8");
    for (let i = 0; i < values.length; i++) size += nameBytes + (values[i]?.length ?? 0);
  }
  return size;
}

/**
 * The default of REPLAYABLE_MAX_RECORD_HEADERS: a record with more headers is dead-lettered
 * (RECORD_TOO_MANY_HEADERS). Kafka sets no limit; producers send a handful (CloudEvents binary
 * mode: 4 to 10, tracing a few more). The limit bounds the work and memory one record costs after
 * decoding (each header is a few JS objects, against 2 bytes on the wire at least).
 */
export const DEFAULT_MAX_RECORD_HEADERS = 1000;

/** The number of headers of `record`, repeated names counted once per value. */
export function headerCount(record: KafkaRecord): number {
  const known = (record as Partial<SizedRecord>)[RECORD_HEADER_COUNT];
  if (known !== undefined) return known;
  let count = 0;
  for (const name in record.headers) {
    if (Object.hasOwn(record.headers, name)) count += record.headers[name]!.length;
  }
  return count;
}
