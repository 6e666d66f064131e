/**
 * `status`'s warning for a topic it found but the cluster does not list: deleted, or hidden from a
 * principal that may not Describe it (Kafka's topic list leaves such topics out).
 */
import { describe, expect, it } from "vitest";
import { kafkaSecurityFailure } from "../../../src/kafka/securityFailure.js";
import { goneTopicWarning } from "../../../src/replay/missingTopics.js";

describe("goneTopicWarning", () => {
  it("says a topic no longer exists when Kafka did not refuse it", () => {
    expect(goneTopicWarning("orders", "checkpoints")).toBe(
      "topic orders: the projection has checkpoints for it, but it no longer exists on the cluster",
    );
    expect(goneTopicWarning("orders", "committed offsets")).toContain(
      "the group has committed offsets for it",
    );
    // Neither: a member consumed it (replayable.projection_topics) before it was deleted.
    expect(goneTopicWarning("orders", "consumed")).toBe(
      "topic orders: the projection's members consumed it, but it no longer exists on the cluster",
    );
  });

  it("names TOPIC_AUTHORIZATION_FAILED and the Describe ACL instead of 'no longer exists' when Kafka refused it", () => {
    // A metadata request for the topic, refused as KafkaJS reports it.
    const refusal = kafkaSecurityFailure(
      Object.assign(new Error("Not authorized to access topics: [Topic authorization failed.]"), {
        name: "KafkaJSProtocolError",
        type: "TOPIC_AUTHORIZATION_FAILED",
      }),
      {
        security: {
          protocol: "SASL_PLAINTEXT",
          sasl: { mechanism: "SCRAM-SHA-512", username: "bob", password: "pw" },
          ssl: undefined,
        },
        brokers: ["b1:9092"],
        topics: ["orders"],
        topicOperations: ["Describe"],
      },
    );
    const warning = goneTopicWarning("orders", "checkpoints", refusal);
    expect(warning).not.toContain("no longer exists");
    expect(warning).toContain(
      "topic orders: the projection has checkpoints for it, but the cluster does not list it to this principal: Kafka refused Describe on topic 'orders' (TOPIC_AUTHORIZATION_FAILED) for User:bob",
    );
    expect(warning).toContain("--operation Describe --topic orders");
  });
});
