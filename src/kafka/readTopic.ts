/** Reading a topic from the beginning up to its high watermarks (tests and inspection tools). */
import { randomBytes } from "node:crypto";
import type { Kafka } from "kafkajs";
import { compareOffsets, offsetDistance } from "../offsets.js";
import type { KafkaRecord } from "../record.js";
import { toRecord } from "./toRecord.js";

/**
 * Reads every record of `topic` from the log start offset up to the high watermarks taken when
 * called, with a throwaway consumer group that commits nothing. Records are ordered by partition,
 * then offset. (Transaction markers take offsets too: this is for topics without transactions.)
 * @param timeoutMs give up after this long (ms); default 60000.
 * @throws Error when the records are not all read within `timeoutMs`.
 */
export async function readTopic(kafka: Kafka, topic: string, timeoutMs = 60_000): Promise<KafkaRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, string>;
  let expected = 0n;
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    ends = new Map(offsets.map((o) => [o.partition, o.high]));
    for (const o of offsets) expected += offsetDistance(o.high, o.low);
  } finally {
    await admin.disconnect();
  }
  const records: KafkaRecord[] = [];
  if (expected === 0n) return records;
  const consumer = kafka.consumer({ groupId: `replayable-read-${randomBytes(6).toString("hex")}` });
  await consumer.connect();
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const done = new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`read ${records.length} of ${expected} records of ${topic} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      void consumer.run({
        autoCommit: false,
        eachMessage: ({ partition, message }) => {
          if (compareOffsets(message.offset, ends.get(partition) ?? "0") < 0)
            records.push(toRecord(topic, partition, message));
          if (BigInt(records.length) >= expected) resolve();
          return Promise.resolve();
        },
      });
    });
    await done;
  } finally {
    clearTimeout(timer);
    await consumer.disconnect();
  }
  return records.sort((a, b) => a.partition - b.partition || compareOffsets(a.offset, b.offset));
}
