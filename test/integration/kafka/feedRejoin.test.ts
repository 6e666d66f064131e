/**
 * `KafkaFeed.rejoin` against the real broker (issue 25, item 1): the engine gives a generation up
 * (its rebuild epoch unproven, or a batch refused with PROJECTION_REBUILT) and asks the feed to
 * rejoin; nothing else would start a rebalance, and the fetchers would go on from positions past
 * what the engine dropped. After the rejoin the partition is fetched again from its committed
 * offset, in a new generation; a request for a generation that already ended does nothing. The
 * same for the @platformatic/kafka feed (`PlatformaticFeed.rejoin`, issue 30).
 */
import { expect, it, onTestFinished } from "vitest";
import type { FeedListener, FetchedBatch } from "../../../src/feed.js";
import { KafkaFeed } from "../../../src/kafka/kafkaFeed.js";
import { PlatformaticFeed } from "../../../src/kafka/platformatic/platformaticFeed.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import { BROKERS, testKafka, uniqueName, useStack, waitFor } from "../../helpers/stack.js";

const stack = useStack();

/** Records what the feed reports. */
class Recorder implements FeedListener {
  readonly generations: number[] = [];
  readonly batches: FetchedBatch[] = [];
  unassignedCount = 0;

  assigned(generation: number): void {
    this.generations.push(generation);
  }
  unassigned(): void {
    this.unassignedCount += 1;
  }
  fetched(batch: FetchedBatch): void {
    this.batches.push(batch);
  }
  crashed(error: Error): void {
    throw error;
  }

  /** The first offsets of the batches of `generation`. */
  firstOffsets(generation: number): string[] {
    return this.batches.filter((b) => b.generation === generation).map((b) => b.firstOffset);
  }
}

/** A feed of `client` on `topic`, in a group of its own. */
function feedOf(client: "kafkajs" | "platformatic", topic: string): KafkaFeed | PlatformaticFeed {
  const options = {
    kafka: testKafka(),
    groupId: uniqueName("g"),
    topics: [topic],
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 500,
    fetchLimits: { maxBytesPerPartition: 1_048_576, maxBytes: 10_485_760 },
    log: createLogger("silent"),
  };
  return client === "kafkajs"
    ? new KafkaFeed({ ...options, partitionsConsumedConcurrently: 1 })
    : new PlatformaticFeed({ ...options, brokers: BROKERS, clientId: "replayable-test" });
}

it.each(["kafkajs", "platformatic"] as const)(
  "%s: rejoins the group and fetches the partition again from its committed offset, in a new generation; an ended generation's request does nothing",
  async (client) => {
    const topic = uniqueName("rejoin");
    await stack.admin.createTopic(topic, 1);
    const records = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => ({
        key: null,
        value: String(from + i),
        partition: 0,
      }));
    await produceRecords(testKafka(), topic, records(0, 9));
    const feed = feedOf(client, topic);
    const listener = new Recorder();
    onTestFinished(() => feed.stop(() => Promise.resolve()));
    await feed.start(listener);
    const first = await waitFor("the first join", () => listener.generations[0]);
    await waitFor("records 0..9", () =>
      listener.batches.some((b) => b.throughOffset === "9") ? true : undefined,
    );
    expect(await feed.commit({ topic, partition: 0 }, "5", first)).toBe("committed");
    // Records the engine would not apply: fetched past the committed offset in this generation.
    await produceRecords(testKafka(), topic, records(10, 14));
    await waitFor("records 10..14", () =>
      listener.batches.some((b) => b.throughOffset === "14") ? true : undefined,
    );

    feed.rejoin(first);
    const second = await waitFor("the join after the rejoin", () => listener.generations[1]);
    expect(second).toBeGreaterThan(first);
    await waitFor("the partition fetched again from the committed offset", () =>
      listener.batches.some((b) => b.generation === second && b.throughOffset === "14") ? true : undefined,
    );
    expect(listener.firstOffsets(second)[0]).toBe("5");
    expect(feed.isJoined).toBe(true);

    // A request for the generation that ended does nothing: no third join, nothing fetched again.
    feed.rejoin(first);
    await produceRecords(testKafka(), topic, records(15, 15));
    await waitFor("record 15", () =>
      listener.batches.some((b) => b.throughOffset === "15") ? true : undefined,
    );
    expect(listener.generations).toEqual([first, second]);
    expect(listener.firstOffsets(second).filter((o) => o === "5")).toHaveLength(1);
  },
);
