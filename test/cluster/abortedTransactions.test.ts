/**
 * Regression (issue 11, case 3 "Aborted records are applied"): KafkaJS 2.2.4's
 * `filterAbortedMessages` switched on at most one aborted transaction per message and assumed the
 * broker lists aborted transactions by first offset (it lists them in the order they were aborted),
 * so with two producers' transactions interleaved on one partition and both aborted, records of an
 * aborted transaction were delivered under read_committed. Fixed at the source by
 * patches/kafkajs+2.2.4+001+aborted-transactions.patch (see patches/README.md).
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ConsumerService } from "../../src/engine/consumerService.js";
import { createLogger } from "../../src/logger.js";
import type { Projection } from "../../src/projection.js";
import { metricOf } from "../helpers/inProcess.js";
import { highWatermarkOf, readToEnd } from "../helpers/readToEnd.js";
import { BROKERS, uniqueName, useStack, waitForCaughtUp } from "../helpers/stack.js";
import { transactionalProducer, type TransactionalProducer } from "../helpers/transactional.js";
import { createReplicatedTopic } from "../helpers/cluster.js";

const stack = useStack();

/** Stores each applied record's value with its offset in `public.applied`. */
const recordValues: Projection<string> = {
  name: "record_values",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: ["public.applied"],
  decode: (record) => record.value?.toString("utf8") ?? "",
  async apply({ client }, { record, value }) {
    await client.query("INSERT INTO public.applied (o, v) VALUES ($1, $2)", [record.offset, value]);
  },
};

/**
 * Writes committed and aborted transactions of producers `a` and `b` to partition 0 of `topic`,
 * ending with an aborted one, and returns the values of the committed records in log order.
 * Each send is its own record batch; the interleavings are the ones KafkaJS 2.2.4 got wrong.
 */
async function writeTransactions(topic: string, a: TransactionalProducer, b: TransactionalProducer) {
  const committed: string[] = [];
  const send = async (p: TransactionalProducer, value: string, commits: boolean) => {
    await p.send(topic, [{ key: p.transactionalId, value }]);
    if (commits) committed.push(value);
  };
  // 1. A committed transaction on its own.
  await a.begin();
  await send(a, "a-committed-1", true);
  await send(a, "a-committed-2", true);
  await a.commit();
  // 2. Two aborted transactions interleaved, the later one aborted first.
  await a.begin();
  await b.begin();
  await send(a, "a-aborted-1", false);
  await send(b, "b-aborted-1", false);
  await send(a, "a-aborted-2", false);
  await send(b, "b-aborted-2", false);
  await b.abort();
  await a.abort();
  // 3. An aborted transaction interleaved with a committed one.
  await b.begin();
  await a.begin();
  await send(b, "b-aborted-3", false);
  await send(a, "a-committed-3", true);
  await send(b, "b-aborted-4", false);
  await a.commit();
  await send(b, "b-aborted-5", false);
  await b.abort();
  // 4. A committed transaction of each producer (nothing of theirs may be dropped).
  await b.begin();
  await send(b, "b-committed-1", true);
  await b.commit();
  await a.begin();
  await send(a, "a-committed-last", true);
  await a.commit();
  // 5. The topic ends with two aborted transactions interleaved, the later one aborted first.
  await a.begin();
  await b.begin();
  await send(a, "a-aborted-6", false);
  await send(b, "b-aborted-6", false);
  await send(a, "a-aborted-7", false);
  await b.abort();
  await a.abort();
  return committed;
}

describe("aborted transactions", () => {
  it("applies only committed records when two producers' aborted transactions interleave on one partition", async () => {
    const topic = uniqueName("txn");
    const group = uniqueName("g");
    await createReplicatedTopic(topic, 1);
    await stack.db.pool.query("CREATE TABLE public.applied (o bigint PRIMARY KEY, v text NOT NULL)");
    const a = await transactionalProducer();
    const b = await transactionalProducer();
    let committed: string[];
    try {
      committed = await writeTransactions(topic, a, b);
    } finally {
      await a.disconnect();
      await b.disconnect();
    }

    const service = new ConsumerService({
      config: loadConfig({
        KAFKA_BROKERS: BROKERS.join(","),
        DATABASE_URL: stack.db.url,
        REPLAYABLE_PROJECTION: "record_values",
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
      }),
      projection: recordValues,
      log: createLogger("silent"),
      http: false,
    });
    onTestFinished(() => service.stop());
    await service.start();
    // Committed through the end of the log (markers and the aborted tail included): every record
    // KafkaJS delivered has been applied.
    await waitForCaughtUp(stack.admin, group, topic);
    await service.stop();

    const applied = await stack.db.pool.query<{ v: string }>("SELECT v FROM public.applied ORDER BY o");
    expect(applied.rows.map((r) => r.v)).toEqual(committed);
    expect(await metricOf(service.metrics, "replayable_records_applied_total", { topic })).toBe(
      committed.length,
    );
  });

  it("KafkaJS itself (readUncommitted false) delivers only the committed records, to the end of the log", async () => {
    const topic = uniqueName("txn-raw");
    await createReplicatedTopic(topic, 1);
    const a = await transactionalProducer();
    const b = await transactionalProducer();
    let committed: string[];
    try {
      committed = await writeTransactions(topic, a, b);
    } finally {
      await a.disconnect();
      await b.disconnect();
    }
    const highWatermark = await highWatermarkOf(stack.admin, topic);
    // Read through the log's end: the aborted tail and its markers included.
    const received = await readToEnd(topic, highWatermark);
    expect(received.map((r) => r.value)).toEqual(committed);
  });
});
