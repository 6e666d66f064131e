/** Converts a KafkaJS message into the engine's {@link KafkaRecord}. */
import type { KafkaMessage } from "kafkajs";
import { RECORD_BYTES, RECORD_HEADER_COUNT, type SizedRecord } from "../record.js";

/** A header value as KafkaJS gives it: bytes, a string, or null (length -1 on the wire). */
type GivenValue = Buffer | string | null;

/**
 * Converts one KafkaJS message into the engine's record: headers normalised to name →
 * `(Buffer | null)[]` (KafkaJS gives a Buffer, a string, null or an array of them), its size and
 * header count counted once ({@link RECORD_BYTES}).
 *
 * The headers object has no prototype, so a header named `__proto__` is an own property like any
 * other instead of replacing the object's prototype (issue 26, item 4), and a null value stays
 * `null` (item 1). KafkaJS as patched here (patch 007, src/kafka/kafkajsPatches.ts) decodes each
 * record's headers into a fresh object without a prototype that nothing reads after this call:
 * that object becomes the record's, its values turned into arrays in place, instead of a copy (a
 * dictionary-mode object per record: about 280 bytes and 2 µs of the member's CPU per record,
 * measured in docs/benchmarks.md "Where the member's extra allocation goes"). Any other headers
 * object (an unpatched shape, a test's literal) is copied into a new one and never changed; the
 * record may share its arrays of Buffers and nulls (neither side changes them).
 */
export function toRecord(topic: string, partition: number, message: KafkaMessage): SizedRecord {
  const given = message.headers;
  const headers: Record<string, (Buffer | null)[]> =
    given !== undefined && Object.getPrototypeOf(given) === null
      ? (given as Record<string, (Buffer | null)[]>)
      : (Object.create(null) as Record<string, (Buffer | null)[]>);
  const key = message.key ?? null;
  const value = message.value ?? null;
  // recordBytes and headerCount (src/record.ts), counted here once instead of on each use.
  let bytes = (key?.length ?? 0) + (value?.length ?? 0);
  let count = 0;
  // for…in, not Object.entries: this runs for every record and should allocate only what it returns.
  for (const name in given) {
    if (!Object.hasOwn(given, name)) continue;
    const values = given[name];
    if (values === undefined) {
      delete headers[name];
      continue;
    }
    const converted = Array.isArray(values) ? toBuffers(values) : [toBuffer(values)];
    headers[name] = converted;
    const nameBytes = Buffer.byteLength(name, "utf8");
    for (let i = 0; i < converted.length; i++) bytes += nameBytes + (converted[i]?.length ?? 0);
    count += converted.length;
  }
  return new FetchedRecord(
    topic,
    partition,
    message.offset,
    message.timestamp,
    key,
    value,
    headers,
    bytes,
    count,
  );
}

/**
 * A record as the Kafka adapter builds it ({@link toRecord}, and src/kafka/recordBatch.ts): one
 * class, so every record has one shape (hidden class) whatever its headers, and its size fields
 * ({@link RECORD_BYTES}, {@link RECORD_HEADER_COUNT}) are own symbol-keyed properties.
 */
export class FetchedRecord implements SizedRecord {
  readonly [RECORD_BYTES]: number;
  readonly [RECORD_HEADER_COUNT]: number;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly offset: string,
    readonly timestamp: string,
    readonly key: Buffer | null,
    readonly value: Buffer | null,
    readonly headers: Readonly<Record<string, readonly (Buffer | null)[]>>,
    bytes: number,
    count: number,
  ) {
    this[RECORD_BYTES] = bytes;
    this[RECORD_HEADER_COUNT] = count;
  }
}

/** The values as Buffers: the array itself when it holds no string (KafkaJS's own), else a converted copy. */
function toBuffers(values: GivenValue[]): (Buffer | null)[] {
  for (let i = 0; i < values.length; i++) if (typeof values[i] === "string") return values.map(toBuffer);
  return values as (Buffer | null)[];
}

function toBuffer(value: GivenValue): Buffer | null {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}
