/**
 * The @platformatic/kafka adapter (KAFKA_CLIENT=platformatic, src/kafka/platformatic/; issue 30,
 * phase 1) against a real broker and PostgreSQL: a member applies every record once and commits
 * after the transaction, a restart resumes from the committed offset, read_committed drops every
 * aborted record where the library's own filter does not, and an offset commit of an ended
 * generation is refused where the library's own `commit` rejoins and lands it.
 */
import type { Consumer, RecordsBatch } from "@platformatic/kafka";
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { committedBatches } from "../../../src/kafka/platformatic/abortedTransactions.js";
import { generationCommitter } from "../../../src/kafka/platformatic/generationCommits.js";
import { loadPlatformaticKafka } from "../../../src/kafka/platformatic/loadClient.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { metricOf } from "../../helpers/inProcess.js";
import { committedOf } from "../../helpers/replay.js";
import { BROKERS, testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";
import { transactionalProducer, type TransactionalProducer } from "../../helpers/transactional.js";

const stack = useStack();

/** Stores each applied record's value up to its first ':' with its partition and offset in `public.applied`. */
const recordValues: Projection<string> = {
  name: "record_values",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: ["public.applied"],
  decode: (record) => (record.value?.toString("utf8") ?? "").split(":")[0]!,
  async apply({ client }, { record, value }) {
    await client.query("INSERT INTO public.applied (p, o, v) VALUES ($1, $2, $3)", [
      record.partition,
      record.offset,
      value,
    ]);
  },
};

async function createAppliedTable(): Promise<void> {
  await stack.db.pool.query(
    "CREATE TABLE public.applied (p int NOT NULL, o bigint NOT NULL, v text NOT NULL, PRIMARY KEY (p, o))",
  );
}

async function appliedValues(): Promise<string[]> {
  const r = await stack.db.pool.query<{ v: string }>("SELECT v FROM public.applied ORDER BY p, o");
  return r.rows.map((row) => row.v);
}

/** A member on @platformatic/kafka, in this process, with its log lines kept in `lines`. */
function platformaticMember(topic: string, group: string, lines: string[], env: Record<string, string> = {}) {
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      KAFKA_CLIENT: "platformatic",
      DATABASE_URL: stack.db.url,
      REPLAYABLE_PROJECTION: recordValues.name,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      ...env,
    }),
    projection: recordValues,
    log: createLogger("info", {}, { write: (line: string) => void lines.push(line) }),
    http: false,
  });
  onTestFinished(() => service.stop());
  return service;
}

/** A padding that makes each record about 700 bytes: with 1 KiB fetches, about one batch per fetch. */
const PAD = ":" + "x".repeat(700);

/**
 * Writes to partition 0 of `topic`: producer `a` aborts two transactions, then commits one;
 * producer `b` aborts a transaction of four batches (with 1 KiB fetches it straddles fetches),
 * then `a` commits again. Returns the values of the committed records, in log order.
 */
async function writeHazards(
  topic: string,
  a: TransactionalProducer,
  b: TransactionalProducer,
): Promise<string[]> {
  const committed: string[] = [];
  const run = async (p: TransactionalProducer, values: string[], commits: boolean) => {
    await p.begin();
    for (const value of values) await p.send(topic, [{ key: p.transactionalId, value: value + PAD }]);
    if (commits) {
      await p.commit();
      committed.push(...values);
    } else await p.abort();
  };
  await run(a, ["a-aborted-1", "a-aborted-2"], false);
  await run(a, ["a-aborted-3", "a-aborted-4"], false);
  await run(a, ["a-committed-1", "a-committed-2"], true);
  await run(b, ["b-aborted-1", "b-aborted-2", "b-aborted-3", "b-aborted-4"], false);
  await run(a, ["a-committed-3"], true);
  return committed;
}

/**
 * Reads partition 0 of `topic` from offset 0 to `end` with the library's `Consumer#fetch`
 * (read_committed, which applies the library's own aborted-transaction filter), `maxBytes` per
 * fetch, and returns the values delivered: as the library's filter leaves them, and after the
 * adapter's filter ({@link committedBatches}) on the same responses.
 */
async function readWithLibrary(topic: string, partitionMaxBytes: number) {
  const lib = await loadPlatformaticKafka();
  const consumer = new lib.Consumer({
    clientId: "replayable-test",
    bootstrapBrokers: BROKERS,
    groupId: uniqueName("raw"),
  });
  onTestFinished(() => consumer.close());
  consumer.topics.track(topic);
  const metadata = await consumer.metadata({ topics: [topic] });
  const { id: topicId, partitions } = metadata.topics.get(topic)!;
  const library: string[] = [];
  const adapter: string[] = [];
  const values = (batches: RecordsBatch[]) =>
    batches
      .filter((batch) => (batch.attributes & (1 << 5)) === 0)
      .flatMap((batch) => batch.records.map((r) => r.value!.toString("utf8").split(":")[0]!));
  const fetchAt = async (fetchOffset: bigint, maxBytes: number) =>
    (
      await consumer.fetch({
        node: partitions[0]!.leader,
        topics: [
          {
            topicId,
            partitions: [
              {
                partition: 0,
                fetchOffset,
                partitionMaxBytes: maxBytes,
                currentLeaderEpoch: -1,
                lastFetchedEpoch: -1,
              },
            ],
          },
        ],
        maxWaitTime: 100,
        isolationLevel: lib.FetchIsolationLevels.READ_COMMITTED,
      })
    ).responses[0]?.partitions[0];
  // The transaction coordinator writes the last COMMIT marker after the producer's EndTxn returned:
  // until it lands, a read_committed fetch stops short of it and the count of fetches below would
  // depend on that race. The end of the log is where the last stable offset meets the high
  // watermark, both read from one fetch: a high watermark read before the marker landed is short of
  // it, and a wait for the last stable offset to reach that one never ends (a CI run timed out so).
  const end = await waitFor("the last stable offset to reach the high watermark", async () => {
    const partition = await fetchAt(0n, 1);
    return partition !== undefined && partition.lastStableOffset === partition.highWatermark
      ? partition.highWatermark
      : undefined;
  });
  let offset = 0n;
  let fetches = 0;
  while (offset < end) {
    const partition = await fetchAt(offset, partitionMaxBytes);
    const batches = partition?.records ?? [];
    if (batches.length === 0) continue;
    fetches += 1;
    library.push(...values(batches));
    adapter.push(...values(committedBatches(batches, partition!.abortedTransactions)));
    const last = batches[batches.length - 1]!;
    offset = last.firstOffset + BigInt(last.lastOffsetDelta) + 1n;
  }
  return { library, adapter, fetches };
}

describe("the @platformatic/kafka feed", () => {
  it("applies every record once, commits after the transaction, and a restart resumes from the committed offset", async () => {
    const topic = uniqueName("plt");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 3);
    await createAppliedTable();
    const first = Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: `first-${i}` }));
    await produceRecords(testKafka(), topic, first);

    const lines: string[] = [];
    const one = platformaticMember(topic, group, lines);
    await one.start();
    await waitForCaughtUp(stack.admin, group, topic);
    await one.stop();
    expect(await one.done).toEqual({ kind: "stopped" });
    expect(lines.some((line) => line.includes("the feed runs on @platformatic/kafka"))).toBe(true);
    expect(await metricOf(one.metrics, "replayable_records_applied_total", { topic })).toBe(60);
    // The committed offsets are the checkpoints: each transaction's offset was committed after it.
    const checkpoints = await stack.db.pool.query<{ partition: number; next_offset: string }>(
      "SELECT partition, next_offset::text FROM replayable.checkpoints WHERE topic = $1",
      [topic],
    );
    const committed = await committedOf(stack.admin, group, topic);
    for (const row of checkpoints.rows) expect(committed[row.partition]).toBe(row.next_offset);

    const second = Array.from({ length: 15 }, (_, i) => ({ key: `k${i}`, value: `second-${i}` }));
    await produceRecords(testKafka(), topic, second);
    const two = platformaticMember(topic, group, []);
    await two.start();
    await waitForCaughtUp(stack.admin, group, topic);
    await two.stop();
    // Only the new records: nothing before the committed offsets was fetched again.
    expect(await metricOf(two.metrics, "replayable_records_applied_total", { topic })).toBe(15);
    expect(await metricOf(two.metrics, "replayable_duplicates_total", { topic })).toBe(0);
    const applied = await appliedValues();
    expect(applied).toHaveLength(75);
    expect(new Set(applied).size).toBe(75);
  });

  it("KIP-848 (KAFKA_GROUP_PROTOCOL=consumer): two members share the partitions, every record applied once, and the group is caught up", async () => {
    const topic = uniqueName("plt-848");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 4);
    await createAppliedTable();
    await produceRecords(
      testKafka(),
      topic,
      Array.from({ length: 80 }, (_, i) => ({ key: `k${i}`, value: `first-${i}` })),
    );
    const env = { KAFKA_GROUP_PROTOCOL: "consumer" };
    const lines: string[] = [];
    const one = platformaticMember(topic, group, lines, env);
    await one.start();
    await waitForCaughtUp(stack.admin, group, topic);
    expect(lines.some((line) => line.includes('"groupProtocol":"consumer"'))).toBe(true);
    // A second member: the broker moves partitions to it (KIP-848's incremental assignment).
    const assigned: number[] = [];
    const two = new ConsumerService({
      config: loadConfig({
        KAFKA_BROKERS: BROKERS.join(","),
        KAFKA_CLIENT: "platformatic",
        KAFKA_GROUP_PROTOCOL: "consumer",
        DATABASE_URL: stack.db.url,
        REPLAYABLE_PROJECTION: recordValues.name,
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
      }),
      projection: recordValues,
      log: createLogger("silent"),
      http: false,
      onAssignment: (assignment) => assigned.push(Object.values(assignment).flat().length),
    });
    onTestFinished(() => two.stop());
    await two.start();
    await waitFor("the second member to get partitions", () =>
      assigned.some((n) => n > 0) ? true : undefined,
    );
    await produceRecords(
      testKafka(),
      topic,
      Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: `second-${i}` })),
    );
    await waitForCaughtUp(stack.admin, group, topic);
    await two.stop();
    await one.stop();
    const applied = await appliedValues();
    expect(applied).toHaveLength(120);
    expect(new Set(applied).size).toBe(120);
    expect(await one.done).toEqual({ kind: "stopped" });
  });

  it("the library's own read_committed filter delivers aborted records; the adapter's does not", async () => {
    const topic = uniqueName("plt-txn-raw");
    await stack.admin.createTopic(topic, 1);
    const a = await transactionalProducer();
    const b = await transactionalProducer();
    let committed: string[];
    try {
      committed = await writeHazards(topic, a, b);
    } finally {
      await a.disconnect();
      await b.disconnect();
    }
    // One fetch of the whole partition: the library keeps one aborted range per producer, so a's
    // first aborted transaction is delivered.
    const whole = await readWithLibrary(topic, 1_048_576);
    expect(whole.fetches).toBe(1);
    expect(whole.library).toContain("a-aborted-1");
    expect(whole.adapter).toEqual(committed);
    // A fetch per record batch (KIP-74: the first batch comes whole): no ABORT marker is ever in
    // the fetch of the records it aborts, and the library delivers every aborted record.
    const perBatch = await readWithLibrary(topic, 1);
    expect(perBatch.library).toEqual(expect.arrayContaining(["a-aborted-3", "b-aborted-1", "b-aborted-4"]));
    expect(perBatch.adapter).toEqual(committed);
  });

  it("a member applies only committed records when aborted transactions repeat and straddle fetches", async () => {
    const topic = uniqueName("plt-txn");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 1);
    await createAppliedTable();
    const a = await transactionalProducer();
    const b = await transactionalProducer();
    let committed: string[];
    try {
      committed = await writeHazards(topic, a, b);
    } finally {
      await a.disconnect();
      await b.disconnect();
    }
    // Fetches of 1 KiB per partition: about one record batch each.
    const member = platformaticMember(topic, group, [], { REPLAYABLE_MAX_BATCH_BYTES: "1024" });
    await member.start();
    // Committed through the end of the log (markers and aborted records counted): lag 0.
    await waitForCaughtUp(stack.admin, group, topic);
    await member.stop();
    expect(await appliedValues()).toEqual(committed);
    expect(await metricOf(member.metrics, "replayable_records_applied_total", { topic })).toBe(
      committed.length,
    );
  });

  it("an offset commit of an ended generation is refused, where the library's own commit rejoins and lands it", async () => {
    const topic = uniqueName("plt-fence");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 1);
    const lib = await loadPlatformaticKafka();
    const options = {
      clientId: "replayable-test",
      bootstrapBrokers: BROKERS,
      groupId: group,
      sessionTimeout: 6000,
      heartbeatInterval: 200,
      rebalanceTimeout: 10_000,
      timeout: 15_000,
    };
    const a: Consumer = new lib.Consumer(options);
    const b: Consumer = new lib.Consumer(options);
    onTestFinished(async () => {
      await a.close(true);
      await b.close(true);
    });
    a.topics.track(topic);
    b.topics.track(topic);
    await a.joinGroup({});
    const stale = { generationId: a.generationId, memberId: a.memberId! };
    // b joins: a new generation (a rejoins at its next heartbeat).
    await b.joinGroup({});
    await waitFor("a to rejoin in b's generation", () =>
      a.generationId === b.generationId && a.generationId > stale.generationId ? true : undefined,
    );
    await a.commit({ offsets: [{ topic, partition: 0, offset: 5n, leaderEpoch: -1 }] });
    expect((await committedOf(stack.admin, group, topic))[0]).toBe("5");

    // The adapter's commit with the ended generation's ids: refused, the offset does not move.
    const commit = generationCommitter(lib, a).commitOffsetsOfGeneration({
      ...stale,
      topics: [{ topic, partitions: [{ partition: 0, offset: "3" }] }],
    });
    await expect(commit).rejects.toMatchObject({ type: "ILLEGAL_GENERATION" });
    expect((await committedOf(stack.admin, group, topic))[0]).toBe("5");

    // The library's own commit, as if sent in the ended generation: ILLEGAL_GENERATION makes it
    // rejoin and send the same offset again in the new generation, where it lands (the hazard).
    a.generationId = stale.generationId;
    await a.commit({ offsets: [{ topic, partition: 0, offset: 3n, leaderEpoch: -1 }] });
    expect((await committedOf(stack.admin, group, topic))[0]).toBe("3");
  });
});
