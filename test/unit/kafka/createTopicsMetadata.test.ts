/**
 * KafkaJS patch 014 (patches/README.md): `admin.createTopics` waits for the new topic's leaders
 * with Metadata requests after the broker accepted the CreateTopics request. Under KRaft a broker
 * applies the topic to its metadata cache asynchronously (KAFKA-15780), so the first Metadata
 * answer can be UNKNOWN_TOPIC_OR_PARTITION for a topic that exists; KafkaJS 2.2.4 waited only on
 * LEADER_NOT_AVAILABLE and threw, failing `replayable produce`, the demo and a test now and then
 * ("This server does not host this topic-partition"). The broker here is a stand-in whose answers
 * are scripted: the race cannot be produced on demand with a real broker.
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);

const createAdmin = require("kafkajs/src/admin/index.js") as (options: object) => {
  createTopics(options: { topics: { topic: string }[]; timeout?: number }): Promise<boolean>;
};
const { createLogger, LEVELS } = require("kafkajs/src/loggers/index.js") as {
  createLogger: (options: object) => unknown;
  LEVELS: { NOTHING: number };
};
const { KafkaJSProtocolError } = require("kafkajs/src/errors.js") as {
  KafkaJSProtocolError: new (e: object) => Error;
};
const { createErrorFromCode } = require("kafkajs/src/protocol/error.js") as {
  createErrorFromCode: (code: number) => Error & { type: string };
};

/** An admin whose controller broker answers Metadata with `answers` in turn (an error code, or 0 for the topic). */
function adminAnswering(answers: number[]) {
  const metadataCalls: string[][] = [];
  const broker = {
    createTopics: () => Promise.resolve({}),
    metadata: (topics: string[]) => {
      metadataCalls.push(topics);
      const code = answers.shift() ?? 0;
      if (code !== 0) return Promise.reject(createErrorFromCode(code));
      return Promise.resolve({ topicMetadata: topics.map((topic) => ({ topic, partitionMetadata: [] })) });
    },
  };
  const cluster = {
    refreshMetadata: () => Promise.resolve(),
    findControllerBroker: () => Promise.resolve(broker),
  };
  const admin = createAdmin({
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined }),
    cluster,
    retry: { retries: 0 },
  });
  return { admin, metadataCalls };
}

describe("KafkaJS patch 014: createTopics waits for a topic its broker does not know yet", () => {
  it("waits through UNKNOWN_TOPIC_OR_PARTITION (3) after the create, as through LEADER_NOT_AVAILABLE (5)", async () => {
    const { admin, metadataCalls } = adminAnswering([3, 5, 3]);
    await expect(admin.createTopics({ topics: [{ topic: "t" }], timeout: 5000 })).resolves.toBe(true);
    expect(metadataCalls).toEqual([["t"], ["t"], ["t"], ["t"]]);
  });

  it("still throws any other error at once", async () => {
    // TOPIC_AUTHORIZATION_FAILED (29): waiting cannot help.
    const { admin, metadataCalls } = adminAnswering([29]);
    const error = await admin
      .createTopics({ topics: [{ topic: "t" }], timeout: 5000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaJSProtocolError);
    expect((error as { type: string }).type).toBe("TOPIC_AUTHORIZATION_FAILED");
    expect(metadataCalls).toHaveLength(1);
  });
});
