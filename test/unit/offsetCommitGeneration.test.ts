/**
 * Regression (issue 25, item 4 "Backward commit"): which group generation each OffsetCommit request
 * carries. The fake member here runs KafkaJS 2.2.4's own commit path (`Runner#commitOffsets` with
 * its retrier, `ConsumerGroup#commitOffsets`, `OffsetManager#commitOffsets`); only the cluster and
 * the group coordinator are fakes, which record each request and answer as the test says.
 * KafkaJS's retrier reads the consumer group's *current* offset manager again on every attempt, so
 * a commit of generation N retried after the member rejoined went out with generation N+1's id and
 * the broker accepted it: the group's offset could move backwards past what the partition's next
 * owner had committed. And a commit asked while KafkaJS's runner was not running was dropped
 * without a request, yet answered as committed.
 */
import { createRequire } from "node:module";
import { describe, expect, it, vi } from "vitest";
import { OffsetCommits } from "../../src/kafka/offsetCommits.js";
import { createLogger } from "../../src/logger.js";

const require = createRequire(import.meta.url);

/** KafkaJS's internals, loaded as they run inside the consumer (typed as far as the test uses them). */
interface KafkajsRunner {
  running: boolean;
  commitOffsets(offsets: unknown): Promise<void>;
}
interface KafkajsConsumerGroup {
  generationId: number;
  memberId: string;
  coordinator: unknown;
  offsetManager: unknown;
}
const Runner = require("kafkajs/src/consumer/runner.js") as new (options: object) => KafkajsRunner;
const ConsumerGroup = require("kafkajs/src/consumer/consumerGroup.js") as new (
  options: object,
) => KafkajsConsumerGroup;
const OffsetManager = require("kafkajs/src/consumer/offsetManager/index.js") as new (
  options: object,
) => unknown;
const InstrumentationEventEmitter = require("kafkajs/src/instrumentation/emitter.js") as new () => unknown;
const { createLogger: createKafkajsLogger, LEVELS } = require("kafkajs/src/loggers/index.js") as {
  createLogger: (options: { level: number; logCreator: () => () => void }) => unknown;
  LEVELS: { NOTHING: number };
};
const { createErrorFromCode } = require("kafkajs/src/protocol/error.js") as {
  createErrorFromCode: (code: number) => Error;
};
const { KafkaJSNonRetriableError } = require("kafkajs/src/errors.js") as {
  KafkaJSNonRetriableError: new (message: string) => Error;
};

/** Kafka error codes (the protocol's): NOT_COORDINATOR, ILLEGAL_GENERATION, GROUP_AUTHORIZATION_FAILED. */
const NOT_COORDINATOR = 16;
const ILLEGAL_GENERATION = 22;
const GROUP_AUTHORIZATION_FAILED = 30;

interface OffsetCommitRequest {
  readonly groupGenerationId: number;
  readonly memberId: string;
  readonly offset: string;
}

/**
 * A member of group "g" over KafkaJS's commit path with a fake coordinator. `answers` are the
 * coordinator's answers to the successive OffsetCommit requests (absent: accepted).
 */
function member(answers: ((request: OffsetCommitRequest) => Promise<void> | void)[] = []) {
  const requests: OffsetCommitRequest[] = [];
  const accepted: OffsetCommitRequest[] = [];
  const coordinator = {
    isConnected: () => true,
    offsetCommit: async (payload: {
      groupGenerationId: number;
      memberId: string;
      topics: { partitions: { offset: { toString(): string } }[] }[];
    }) => {
      const request = {
        groupGenerationId: payload.groupGenerationId,
        memberId: payload.memberId,
        offset: payload.topics[0]!.partitions[0]!.offset.toString(),
      };
      requests.push(request);
      await answers.shift()?.(request);
      accepted.push(request);
      return {};
    },
  };
  const committedOffsets = {};
  const cluster = {
    committedOffsets: () => committedOffsets,
    refreshMetadata: () => Promise.resolve(),
    findBroker: () => Promise.resolve(coordinator),
    findGroupCoordinator: () => Promise.resolve(coordinator),
  };
  const logger = createKafkajsLogger({ level: LEVELS.NOTHING, logCreator: () => () => {} });
  const instrumentationEmitter = new InstrumentationEventEmitter();
  const retry = { initialRetryTime: 50, maxRetryTime: 200, retries: 5 };
  const group = new ConsumerGroup({
    retry,
    cluster,
    groupId: "g",
    topics: ["t"],
    topicConfigurations: { t: {} },
    logger,
    instrumentationEmitter,
    assigners: [],
    sessionTimeout: 30_000,
    rebalanceTimeout: 60_000,
    maxBytesPerPartition: 1_048_576,
    minBytes: 1,
    maxBytes: 10_485_760,
    maxWaitTimeInMs: 100,
    autoCommit: false,
  });
  const runner = new Runner({
    logger,
    consumerGroup: group,
    instrumentationEmitter,
    heartbeatInterval: 3000,
    retry,
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: () => Promise.resolve(),
    onCrash: () => {},
    concurrency: 1,
  });
  runner.running = true;
  // The consumer's two ways to commit: KafkaJS's own commitOffsets (consumer/index.js hands the
  // offsets to the runner like this), which OffsetCommits used before issue 25 and must not use,
  // and patch 006's, whose real code the integration test commitGeneration.test.ts runs.
  const consumer = {
    commitOffsets: (offsets: { topic: string; partition: number; offset: string }[]) =>
      runner.commitOffsets({
        topics: offsets.map(({ topic, partition, offset }) => ({
          topic,
          partitions: [{ partition, offset }],
        })),
      }),
    // Patch 006: one OffsetCommit request carrying exactly the ids given.
    commitOffsetsOfGeneration: async ({
      generationId,
      memberId,
      topics,
    }: {
      generationId: number;
      memberId: string;
      topics: { topic: string; partitions: { partition: number; offset: string }[] }[];
    }) => {
      await coordinator.offsetCommit({ groupGenerationId: generationId, memberId, topics });
    },
  };
  const commits = new OffsetCommits({
    consumer,
    log: createLogger("silent"),
    stopping: () => false,
    retryInitialMs: 10,
    retryMaxMs: 20,
  });
  let generation = 0;
  /** A group join as KafkaJS makes it (a new offset manager) and as the feed reports it. */
  const join = (generationId: number, memberId: string) => {
    group.generationId = generationId;
    group.memberId = memberId;
    group.coordinator = coordinator;
    group.offsetManager = new OffsetManager({
      cluster,
      coordinator,
      memberAssignment: { t: [0] },
      autoCommit: false,
      topicConfigurations: { t: {} },
      instrumentationEmitter,
      groupId: "g",
      generationId,
      memberId,
    });
    generation += 1;
    commits.newGeneration(generation, { generationId, memberId });
  };
  return { commits, requests, accepted, join, runner };
}

const tp = { topic: "t", partition: 0 };

describe("OffsetCommits: the generation each OffsetCommit request carries", () => {
  it("never sends a commit of generation N with N+1's id when its first attempt met NOT_COORDINATOR and the member rejoined before the retry", async () => {
    const { commits, requests, accepted, join } = member([
      () => {
        // The coordinator moved; before the commit is tried again the member has rejoined.
        join(8, "member-1");
        throw createErrorFromCode(NOT_COORDINATOR);
      },
    ]);
    join(7, "member-1");
    const result = await commits.commit(tp, "10", 1);
    expect(requests.map((r) => r.groupGenerationId)).not.toContain(8);
    expect(accepted).toEqual([]);
    expect(result).toBe("skipped_rebalanced");
  });

  it("retries a commit that met NOT_COORDINATOR with the same generation's ids while that generation lasts", async () => {
    const { commits, requests, join } = member([
      () => {
        throw createErrorFromCode(NOT_COORDINATOR);
      },
    ]);
    join(7, "member-1");
    expect(await commits.commit(tp, "10", 1)).toBe("committed");
    expect(requests).toEqual([
      { groupGenerationId: 7, memberId: "member-1", offset: "10" },
      { groupGenerationId: 7, memberId: "member-1", offset: "10" },
    ]);
  });

  it("answers skipped_rebalanced when the coordinator refuses the generation (ILLEGAL_GENERATION)", async () => {
    const { commits, requests, join } = member([
      () => {
        throw createErrorFromCode(ILLEGAL_GENERATION);
      },
    ]);
    join(7, "member-1");
    expect(await commits.commit(tp, "10", 1)).toBe("skipped_rebalanced");
    expect(requests).toHaveLength(1);
  });

  it("does not retry an error no retry can fix (GROUP_AUTHORIZATION_FAILED): one request, failed", async () => {
    const { commits, requests, join } = member([
      () => {
        throw createErrorFromCode(GROUP_AUTHORIZATION_FAILED);
      },
    ]);
    join(7, "member-1");
    expect(await commits.commit(tp, "10", 1)).toBe("failed");
    await commits.stop();
    expect(requests).toHaveLength(1);
  });
});

describe("OffsetCommits: a commit is reported committed only when the coordinator accepted it", () => {
  it("a commit asked while KafkaJS's runner is not running is sent, or not reported committed", async () => {
    const { commits, accepted, join, runner } = member();
    join(7, "member-1");
    // KafkaJS's Runner#stop sets this first, then waits for its fetches and leaves the group.
    runner.running = false;
    const result = await commits.commit(tp, "10", 1);
    if (result === "committed")
      expect(accepted).toEqual([{ groupGenerationId: 7, memberId: "member-1", offset: "10" }]);
    expect(result).toBe("committed");
  });

  it("once the member's generation ended (KafkaJS stopped or crashed the consumer), a commit is skipped and nothing sent", async () => {
    const { commits, requests, join } = member();
    join(7, "member-1");
    commits.endGeneration();
    expect(await commits.commit(tp, "10", 1)).toBe("skipped_rebalanced");
    expect(requests).toEqual([]);
  });

  it("a commit the consumer refuses to send (no consumer group running) answers failed, once, never committed", async () => {
    const commitOffsetsOfGeneration = vi.fn(() =>
      Promise.reject(new KafkaJSNonRetriableError("the consumer is not running")),
    );
    const commits = new OffsetCommits({
      consumer: { commitOffsetsOfGeneration },
      log: createLogger("silent"),
      stopping: () => false,
    });
    commits.newGeneration(1, { generationId: 7, memberId: "member-1" });
    expect(await commits.commit(tp, "10", 1)).toBe("failed");
    await commits.stop();
    expect(commitOffsetsOfGeneration).toHaveBeenCalledTimes(1);
  });
});
