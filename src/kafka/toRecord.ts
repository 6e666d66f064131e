/** Converts a KafkaJS message into the engine's {@link KafkaRecord}. */
import type { KafkaMessage } from "kafkajs";
import type { KafkaRecord } from "../record.js";

/** Normalises headers to name → Buffer[] (KafkaJS gives a Buffer, a string or an array of them). */
export function toRecord(topic: string, partition: number, message: KafkaMessage): KafkaRecord {
  const headers: Record<string, Buffer[]> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    headers[name] = values.map((v: Buffer | string) => (typeof v === "string" ? Buffer.from(v, "utf8") : v));
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
