/** Converts a record of @platformatic/kafka's fetch response into the engine's `KafkaRecord` (src/record.ts). */
import { RECORD_BYTES, RECORD_HEADER_COUNT, type SizedRecord } from "../../record.js";

/** Attribute bit 3 of a record batch: its timestamps are the broker's append time (KIP-32). */
const LOG_APPEND_TIME = 1 << 3;

/** The fields of the library's `RecordsBatch` this reads. */
export interface RawBatch {
  readonly firstOffset: bigint;
  readonly attributes: number;
  readonly firstTimestamp: bigint;
  readonly maxTimestamp: bigint;
}

/** The fields of the library's record (`KafkaRecord` of its protocol/records.js) this reads. */
export interface RawRecord {
  readonly offsetDelta: number;
  readonly timestampDelta: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly (readonly [Buffer | null, Buffer | null])[];
}

/** The offset of `record` in `batch`, as a bigint. */
export function offsetOf(batch: RawBatch, record: RawRecord): bigint {
  return batch.firstOffset + BigInt(record.offsetDelta);
}

/**
 * The engine's record of `record` in `batch`: the same shape as src/kafka/toRecord.ts gives for
 * KafkaJS. The headers object has no prototype (a header named `__proto__` is an own property),
 * maps each name (UTF-8) to its values in order (repeated names kept, KIP-82), and keeps a null
 * value as `null`. The timestamp is the record's create time, or the batch's max timestamp when the
 * topic uses LogAppendTime (the Java consumer's rule, `DefaultRecordBatch`).
 */
export function toRecord(topic: string, partition: number, batch: RawBatch, record: RawRecord): SizedRecord {
  const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
  const key = record.key ?? null;
  const value = record.value ?? null;
  let bytes = (key?.length ?? 0) + (value?.length ?? 0);
  const given = record.headers;
  for (let i = 0; i < given.length; i++) {
    const [nameBytes, headerValue] = given[i]!;
    const name = nameBytes === null ? "" : nameBytes.toString("utf8");
    const values = headers[name];
    if (values === undefined) headers[name] = [headerValue];
    else values.push(headerValue);
    // The name's UTF-8 bytes, as recordBytes counts them (src/record.ts), not its bytes on the wire:
    // they differ when those are not UTF-8, and a record's size must not depend on its path.
    bytes += Buffer.byteLength(name, "utf8") + (headerValue?.length ?? 0);
  }
  const timestamp =
    (batch.attributes & LOG_APPEND_TIME) !== 0
      ? batch.maxTimestamp
      : batch.firstTimestamp + record.timestampDelta;
  return {
    topic,
    partition,
    offset: offsetOf(batch, record).toString(),
    timestamp: timestamp.toString(),
    key,
    value,
    headers,
    [RECORD_BYTES]: bytes,
    [RECORD_HEADER_COUNT]: given.length,
  };
}
