/** Converts a KafkaJS message into the engine's {@link KafkaRecord}. */
import type { KafkaMessage } from "kafkajs";
import { RECORD_BYTES, RECORD_HEADER_COUNT, type SizedRecord } from "../record.js";

/** A header value as KafkaJS gives it: bytes, a string, or null (length -1 on the wire). */
type GivenValue = Buffer | string | null;

/**
 * Normalises headers to name → (Buffer | null)[] (KafkaJS gives a Buffer, a string, null or an
 * array of them). The headers object has no prototype (`Object.create(null)`), so a header named
 * `__proto__` is an own property like any other instead of replacing the object's prototype
 * (issue 26, item 4), and a null value stays `null` (item 1).
 */
export function toRecord(topic: string, partition: number, message: KafkaMessage): SizedRecord {
  const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
  const given = message.headers;
  const key = message.key ?? null;
  const value = message.value ?? null;
  // recordBytes and headerCount (src/record.ts), counted here once instead of on each use.
  let bytes = (key?.length ?? 0) + (value?.length ?? 0);
  let count = 0;
  // for…in, not Object.entries: this runs for every record and should allocate only what it returns.
  for (const name in given) {
    if (!Object.hasOwn(given, name)) continue;
    const values = given[name];
    if (values === undefined) continue;
    const converted = Array.isArray(values) ? values.map(toBuffer) : [toBuffer(values)];
    headers[name] = converted;
    const nameBytes = Buffer.byteLength(name, "utf8");
    for (let i = 0; i < converted.length; i++) bytes += nameBytes + (converted[i]?.length ?? 0);
    count += converted.length;
  }
  return {
    topic,
    partition,
    offset: message.offset,
    timestamp: message.timestamp,
    key,
    value,
    headers,
    [RECORD_BYTES]: bytes,
    [RECORD_HEADER_COUNT]: count,
  };
}

function toBuffer(value: GivenValue): Buffer | null {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}
