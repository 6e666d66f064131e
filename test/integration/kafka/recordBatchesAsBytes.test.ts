/**
 * KafkaJS patch 012 (record batches handed over as bytes, patches/README.md) on a real broker: a
 * partition holding plain, gzip-compressed and transactional record batches, an aborted
 * transaction interleaved with a committed one, and records with null, repeated and `__proto__`
 * headers. Read with the option, through the feed's conversion (src/kafka/recordBatch.ts), the
 * records are the ones produced and not aborted, in offset order, exactly as KafkaJS's own decoder
 * and toRecord give them; most record batches came as bytes.
 */
import { CompressionTypes, Partitioners, type EachBatchPayload, type IHeaders } from "kafkajs";
import { expect, it, onTestFinished } from "vitest";
import { fetchedBatches } from "../../../src/kafka/kafkaFeed.js";
import { toRecord } from "../../../src/kafka/toRecord.js";
import { RECORD_BYTES, type KafkaRecord, type SizedRecord } from "../../../src/record.js";
import { highWatermarkOf } from "../../helpers/readToEnd.js";
import { testKafka, uniqueName, useStack, waitFor } from "../../helpers/stack.js";
import { transactionalProducer } from "../../helpers/transactional.js";

const stack = useStack();

function hostileHeaders(i: number): IHeaders {
  const headers = Object.create(null) as IHeaders;
  headers.ce_id = `id-${i}`;
  headers.trace = null;
  headers.__proto__ = "p";
  headers.repeated = ["a", null, "b"];
  return headers;
}

interface Read {
  readonly records: SizedRecord[];
  /** Record batches handed over as bytes (patch 012's `Batch.asBytes`), over every fetch. */
  readonly asBytes: number;
}

/**
 * Reads partition 0 of `topic` to `highWatermark` with a throwaway group under read_committed,
 * with `recordBatchesAsBytes` (through the feed's fetchedBatches) or without (toRecord on
 * KafkaJS's messages). A fetch size of 4 KiB cuts batches at the end of responses.
 */
async function read(topic: string, highWatermark: string, asBytes: boolean): Promise<Read> {
  const consumer = testKafka().consumer({
    groupId: uniqueName("read"),
    recordBatchesAsBytes: asBytes,
    maxBytesPerPartition: 4096,
  });
  onTestFinished(() => consumer.disconnect());
  const records: SizedRecord[] = [];
  let handed = 0;
  let through = -1n;
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: ({ batch }: EachBatchPayload) => {
      handed += batch.asBytes ?? 0;
      if (batch.messages.length > 0) {
        const converted = asBytes
          ? fetchedBatches(batch, 1, batch.lastOffset()).flatMap((f) => f.records as SizedRecord[])
          : batch.messages.map((m) => toRecord(topic, 0, m));
        records.push(...converted);
      }
      const last = BigInt(batch.lastOffset());
      if (last > through) through = last;
      return Promise.resolve();
    },
  });
  await waitFor(`a read of ${topic} to ${highWatermark}`, () =>
    through >= BigInt(highWatermark) - 1n ? true : undefined,
  );
  await consumer.disconnect();
  return { records, asBytes: handed };
}

const hex = (b: Buffer | null): string | null => b?.toString("hex") ?? null;
const fields = (r: SizedRecord): unknown => ({
  offset: r.offset,
  timestamp: r.timestamp,
  key: hex(r.key),
  value: hex(r.value),
  headers: Object.entries(r.headers).map(([name, values]) => [name, values.map(hex)]),
  bytes: r[RECORD_BYTES],
});

it("regression: record batches handed over as bytes give the records KafkaJS's decoder gives, none aborted", async () => {
  const topic = uniqueName("as-bytes");
  await stack.admin.createTopic(topic, 1);
  const kafka = testKafka();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  onTestFinished(() => producer.disconnect());
  const expected: string[] = [];
  const send = async (values: string[], compression: CompressionTypes) => {
    await producer.send({
      topic,
      acks: -1,
      compression,
      messages: values.map((value, i) => ({
        key: `k${i % 3}`,
        value,
        headers: hostileHeaders(i),
        partition: 0,
      })),
    });
    expected.push(...values);
  };
  await send(["plain-1", "plain-2", "plain-3"], CompressionTypes.None);
  await send(
    Array.from({ length: 40 }, (_, i) => `gzip-${i}-${"x".repeat(200)}`),
    CompressionTypes.GZIP,
  );
  // An aborted transaction interleaved with a committed one: b's records must never appear.
  const a = await transactionalProducer();
  const b = await transactionalProducer();
  onTestFinished(async () => {
    await Promise.all([a.disconnect(), b.disconnect()]);
  });
  await a.begin();
  await b.begin();
  await a.send(topic, [{ value: "a-committed-1", headers: { h: "1" } }]);
  await b.send(topic, [{ value: "b-aborted-1" }, { value: "b-aborted-2" }]);
  await a.send(topic, [{ value: "a-committed-2" }, { value: null }]);
  await b.abort();
  await a.commit();
  expected.push("a-committed-1", "a-committed-2", "");
  for (let i = 0; i < 30; i++) await send([`tail-${i}-${"y".repeat(300)}`], CompressionTypes.None);

  const highWatermark = await highWatermarkOf(stack.admin, topic);
  const ours = await read(topic, highWatermark, true);
  const theirs = await read(topic, highWatermark, false);

  expect(ours.records.map((r: KafkaRecord) => r.value?.toString() ?? "")).toEqual(expected);
  expect(ours.records.map(fields)).toEqual(theirs.records.map(fields));
  expect(ours.records[0]!.headers.trace).toEqual([null]);
  expect(ours.records[0]!.headers.__proto__).toEqual([Buffer.from("p")]);
  // The plain, the gzip and a's two transactional batches, and the 30 at the end (b's are KafkaJS's).
  expect(ours.asBytes).toBeGreaterThanOrEqual(34);
  expect(theirs.asBytes).toBe(0);
});
