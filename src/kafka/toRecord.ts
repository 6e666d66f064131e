/** Converts a KafkaJS message into the engine's {@link KafkaRecord}. */
import type { KafkaMessage } from "kafkajs";
import type { KafkaRecord } from "../record.js";

/** A header value as KafkaJS gives it: bytes, a string, or null (length -1 on the wire). */
type GivenValue = Buffer | string | null;

/**
 * Normalises headers to name → (Buffer | null)[] (KafkaJS gives a Buffer, a string, null or an
 * array of them). The headers object has no prototype (`Object.create(null)`), so a header named
 * `__proto__` is an own property like any other instead of replacing the object's prototype
 * (issue 26, item 4), and a null value stays `null` (item 1).
 */
export function toRecord(topic: string, partition: number, message: KafkaMessage): KafkaRecord {
  const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
  const given = message.headers;
  // for…in, not Object.entries: this runs for every record and should allocate only what it returns.
  for (const name in given) {
    if (!Object.hasOwn(given, name)) continue;
    const value = given[name];
    if (value === undefined) continue;
    headers[name] = Array.isArray(value) ? value.map(toBuffer) : [toBuffer(value)];
  }
  return {
    topic,
    partition,
    offset: message.offset,
    timestamp: message.timestamp,
    key: message.key ?? null,
    value: message.value ?? null,
    headers,
  };
}

function toBuffer(value: GivenValue): Buffer | null {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}
