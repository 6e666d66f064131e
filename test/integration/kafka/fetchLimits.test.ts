/**
 * KafkaJS patch 005 (patches/README.md): `consumer.setFetchLimits` changes the fetch size per
 * partition of a running consumer, and a consumer restarted by `stop()` and `run()` (as KafkaJS
 * does after a crash) keeps it; unpatched, `run()` rebuilt its consumer group from the options it
 * was created with. Each record is produced in a request of its own, so it is a record batch of its
 * own: the broker returns whole batches up to the fetch size, and always the first (KIP-74).
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { testKafka, uniqueName, useStack, waitFor } from "../../helpers/stack.js";

const stack = useStack();
const VALUE_BYTES = 1000;

/** Produces `count` records of VALUE_BYTES to partition 0, one produce request (record batch) each. */
async function produceOneByOne(topic: string, from: number, count: number): Promise<void> {
  const kafka = testKafka();
  for (let i = from; i < from + count; i++)
    await produceRecords(kafka, topic, [
      { key: null, value: String(i % 10).repeat(VALUE_BYTES), partition: 0 },
    ]);
}

describe("KafkaJS consumer.setFetchLimits (patch 005)", () => {
  it("applies to the running consumer and survives a restart of it", async () => {
    const topic = uniqueName("fetch-limits");
    await stack.admin.createTopic(topic, 1);
    await produceOneByOne(topic, 0, 20);
    // Options of 1 MiB per partition: every record batch would come in one fetch.
    const consumer = testKafka().consumer({
      groupId: uniqueName("g"),
      maxBytesPerPartition: 1_048_576,
      maxWaitTimeInMs: 100,
    });
    onTestFinished(() => consumer.disconnect());
    const sizes: number[] = [];
    let last = -1;
    const run = () =>
      consumer.run({
        eachBatch: ({ batch }) => {
          sizes.push(batch.messages.length);
          last = Number(batch.lastOffset());
          return Promise.resolve();
        },
      });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    // About one record batch (1,070 bytes on the wire) per fetch.
    consumer.setFetchLimits({ maxBytesPerPartition: 1500, maxBytes: 1500 });
    await run();
    await waitFor("the first 20 records", () => (last >= 19 ? true : undefined));
    expect(Math.max(...sizes)).toBe(1);

    await consumer.stop();
    sizes.length = 0;
    await produceOneByOne(topic, 20, 20);
    await run();
    await waitFor("the next 20 records", () => (last >= 39 ? true : undefined));
    expect(Math.max(...sizes)).toBe(1);
  });

  it("refuses a limit that is not a whole number of bytes >= 1", () => {
    const consumer = testKafka().consumer({ groupId: uniqueName("g") });
    expect(() => consumer.setFetchLimits({ maxBytesPerPartition: 0 })).toThrow(
      /maxBytesPerPartition must be a whole number of bytes >= 1/,
    );
    expect(() => consumer.setFetchLimits({ maxBytes: 1.5 })).toThrow(/maxBytes must be a whole number/);
  });
});
