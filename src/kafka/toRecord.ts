/** Converts a KafkaJS message into the engine's {@link KafkaRecord}. */
import type { KafkaMessage } from "kafkajs";
import type { KafkaRecord } from "../record.js";

/** Normalises headers to name → Buffer[] (KafkaJS gives a Buffer, a string or an array of them). */
export function toRecord(topic: string, partition: number, message: KafkaMessage): KafkaRecord {
  const headers: Record<string, Buffer[]> = {};
  const given = message.headers;
  // for…in, not Object.entries: this runs for every record and should allocate only what it returns.
  for (const name in given) {
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

function toBuffer(value: Buffer | string): Buffer {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}
