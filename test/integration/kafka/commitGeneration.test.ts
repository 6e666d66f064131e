/**
 * Regression (issue 25, item 4 "Backward commit"), against the real broker: an offset commit goes
 * out with the group generation of the batch it commits, and the group coordinator is the fence.
 * A commit of an earlier generation never moves the group's committed offset backwards, and a
 * commit is answered `committed` only when the group's committed offset really is the one sent.
 * KafkaJS patch 006 (patches/README.md): the GROUP_JOIN event names its generation id, and
 * `consumer.commitOffsetsOfGeneration` sends one OffsetCommit with exactly the ids it is given.
 */
import type { Consumer, Kafka } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { FeedListener } from "../../../src/feed.js";
import { KafkaAdmin } from "../../../src/kafka/admin.js";
import { KafkaFeed } from "../../../src/kafka/kafkaFeed.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import { testKafka, uniqueName, waitFor } from "../../helpers/stack.js";

let admin: KafkaAdmin;
beforeAll(async () => {
  admin = await KafkaAdmin.connect(testKafka());
});
afterAll(async () => {
  await admin.close();
});

/** A group join as the KafkaJS consumer reports it (patch 006 adds `generationId`). */
interface Join {
  readonly memberId: string;
  readonly generationId: number | undefined;
  readonly assignment: Record<string, number[]>;
}

/** A {@link KafkaFeed} of `groupId` on `topic`, with its KafkaJS consumer and what it was told. */
function member(groupId: string, topic: string) {
  const kafka: Kafka = testKafka();
  let consumer: Consumer | undefined;
  const createConsumer = kafka.consumer.bind(kafka);
  kafka.consumer = (config) => (consumer = createConsumer(config));
  const feed = new KafkaFeed({
    kafka,
    groupId,
    topics: [topic],
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 500,
    partitionsConsumedConcurrently: 1,
    fetchLimits: { maxBytesPerPartition: 1_048_576, maxBytes: 10_485_760 },
    log: createLogger("error"),
  });
  const kafkajs = consumer!;
  const joins: Join[] = [];
  kafkajs.on(kafkajs.events.GROUP_JOIN, ({ payload }) =>
    joins.push({
      memberId: payload.memberId,
      // Undefined without patch 006.
      generationId: (payload as { generationId?: number }).generationId,
      assignment: payload.memberAssignment,
    }),
  );
  const generations: { generation: number; partitions: number[] }[] = [];
  const listener: FeedListener = {
    assigned: (generation, assignment) =>
      generations.push({ generation, partitions: [...(assignment[topic] ?? [])] }),
    unassigned: () => {},
    fetched: () => {},
    crashed: () => {},
  };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await feed.stop(() => Promise.resolve());
  };
  onTestFinished(stop);
  return {
    feed,
    consumer: kafkajs,
    joins,
    generations,
    start: () => feed.start(listener),
    stop,
    /** The feed's latest generation, once it has one. */
    latest: () => generations[generations.length - 1],
  };
}

async function committedOffset(groupId: string, topic: string): Promise<string> {
  const offsets = await admin.committedOffsets(groupId, [topic]);
  return offsets.find((o) => o.partition === 0)?.offset ?? "-1";
}

describe("offset commits carry the batch's generation", () => {
  it("a commit of an earlier generation, after a rebalance, never moves the group's committed offset backwards", async () => {
    const topic = uniqueName("commit-generation");
    const groupId = uniqueName("g");
    await admin.createTopic(topic, 1);
    // Records through offset 29, so that the offsets committed below lie within the log.
    await produceRecords(
      testKafka(),
      topic,
      Array.from({ length: 30 }, (_, i) => ({ key: null, value: String(i), partition: 0 })),
    );
    const tp = { topic, partition: 0 };

    const a = member(groupId, topic);
    await a.start();
    const first = await waitFor("member A's first generation", () => a.latest());
    expect(first.partitions).toEqual([0]);
    expect(await a.feed.commit(tp, "10", first.generation)).toBe("committed");
    expect(await committedOffset(groupId, topic)).toBe("10");
    const firstJoin = a.joins[a.joins.length - 1]!;

    // A second member joins: A rejoins in a new generation, and one of them owns partition 0.
    const b = member(groupId, topic);
    await b.start();
    await waitFor("both members joined the same new generation", () => {
      const [ja, jb] = [a.joins[a.joins.length - 1], b.joins[b.joins.length - 1]];
      return a.generations.length >= 2 &&
        ja !== undefined &&
        jb !== undefined &&
        ja.generationId === jb.generationId
        ? true
        : undefined;
    });
    const owner = a.latest()!.partitions.includes(0) ? a : b;
    expect(await owner.feed.commit(tp, "20", owner.latest()!.generation)).toBe("committed");
    expect(await committedOffset(groupId, topic)).toBe("20");

    // A's commit of its first generation: skipped, and the group's offset stays.
    expect(await a.feed.commit(tp, "10", first.generation)).toBe("skipped_rebalanced");
    expect(await committedOffset(groupId, topic)).toBe("20");

    // The coordinator itself refuses an OffsetCommit carrying the first generation's ids.
    expect(firstJoin.generationId).toBeTypeOf("number");
    const refused = await a.consumer
      .commitOffsetsOfGeneration({
        generationId: firstJoin.generationId!,
        memberId: firstJoin.memberId,
        topics: [{ topic, partitions: [{ partition: 0, offset: "10" }] }],
      })
      .then(
        () => "accepted",
        (error: { type?: string }) => error.type,
      );
    expect(["ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"]).toContain(refused);
    expect(await committedOffset(groupId, topic)).toBe("20");
  });

  it("a commit asked while KafkaJS's runner is stopping is answered committed only if the group's offset is the one sent", async () => {
    const topic = uniqueName("commit-stopping");
    const groupId = uniqueName("g");
    await admin.createTopic(topic, 1);
    const tp = { topic, partition: 0 };

    const a = member(groupId, topic);
    await a.start();
    const first = await waitFor("the member's first generation", () => a.latest());
    // KafkaJS's Runner#stop marks the runner not running at once, then waits for its fetches and
    // leaves the group; the commit is asked in between.
    const stopping = a.consumer.stop();
    const result = await a.feed.commit(tp, "5", first.generation);
    await stopping;
    const offset = await committedOffset(groupId, topic);
    expect({ result, offset }).toEqual(
      result === "committed" ? { result, offset: "5" } : { result, offset: "-1" },
    );
    expect(["committed", "skipped_rebalanced"]).toContain(result);
  });
});
