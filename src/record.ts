/** The record shape the engine works on, independent of the Kafka client library. */

/**
 * One Kafka record as fetched: topic, partition, offset and the exact bytes.
 * `offset` is a base-10 string (64-bit; see offsets.ts). `timestamp` is ms since the epoch, as a string.
 * `headers` maps each header name to its values in order (Kafka headers may repeat).
 */
export interface KafkaRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, readonly Buffer[]>>;
}

/** The first value of header `name` as UTF-8, or undefined when the record has none. */
export function headerText(record: KafkaRecord, name: string): string | undefined {
  return record.headers[name]?.[0]?.toString("utf8");
}

/** Size of a record in bytes: key + value + header names and values. */
export function recordBytes(record: KafkaRecord): number {
  let size = (record.key?.length ?? 0) + (record.value?.length ?? 0);
  // for…in, not Object.entries: this runs for every record, twice, and allocates nothing.
  for (const name in record.headers) {
    const values = record.headers[name]!;
    for (let i = 0; i < values.length; i++) size += name.length + values[i]!.length;
  }
  return size;
}
