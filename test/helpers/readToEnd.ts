/** Reading a topic's partition to its end with a raw KafkaJS consumer, whatever gaps its offsets have. */
import { onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { testKafka, uniqueName, waitFor } from "./stack.js";

/** A record as the raw consumer delivered it. */
export interface ReadRecord {
  readonly offset: string;
  readonly key: string | null;
  readonly value: string | null;
}

/**
 * Reads partition `partition` of `topic` from its log start offset to `highWatermark` with a
 * throwaway group (read_committed, KafkaJS's defaults: `maxBytesPerPartition` 1 MiB). The end is
 * known from KafkaJS's END_BATCH_PROCESS event, whose `lastOffset` counts the offsets of
 * transaction markers, aborted records and compacted-away records too, so this works where the
 * number of records is not the number of offsets.
 * @throws Error when the end is not reached within `timeoutMs` (ms), naming KafkaJS's crash if it crashed.
 */
export async function readToEnd(
  topic: string,
  highWatermark: string,
  options: { partition?: number; timeoutMs?: number } = {},
): Promise<ReadRecord[]> {
  const partition = options.partition ?? 0;
  const consumer = testKafka().consumer({ groupId: uniqueName("read"), readUncommitted: false });
  onTestFinished(() => consumer.disconnect());
  const records: ReadRecord[] = [];
  let lastOffset = -1n;
  const crashed = new Promise<never>((_, reject) =>
    consumer.on(consumer.events.CRASH, (event) =>
      reject(new Error(`the raw consumer crashed: ${event.payload.error.message}`)),
    ),
  );
  consumer.on(consumer.events.END_BATCH_PROCESS, (event) => {
    if (event.payload.partition !== partition) return;
    const offset = BigInt(event.payload.lastOffset);
    if (offset > lastOffset) lastOffset = offset;
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: ({ partition: p, message }) => {
      if (p === partition && BigInt(message.offset) < BigInt(highWatermark)) {
        records.push({
          offset: message.offset,
          key: message.key?.toString("utf8") ?? null,
          value: message.value?.toString("utf8") ?? null,
        });
      }
      return Promise.resolve();
    },
  });
  const reachedEnd = waitFor(
    `a raw consumer to read ${topic}/${partition} up to ${highWatermark}`,
    () => (lastOffset >= BigInt(highWatermark) - 1n ? true : undefined),
    options.timeoutMs ?? 60_000,
  );
  await Promise.race([reachedEnd, crashed]);
  await consumer.disconnect();
  return records;
}

/** The high watermark of partition `partition` of `topic` now. @throws Error when the partition does not exist. */
export async function highWatermarkOf(admin: ClusterAdmin, topic: string, partition = 0): Promise<string> {
  const found = (await admin.topicOffsets(topic)).find((o) => o.partition === partition);
  if (found === undefined) throw new Error(`${topic} has no partition ${partition}`);
  return found.highWatermark;
}
