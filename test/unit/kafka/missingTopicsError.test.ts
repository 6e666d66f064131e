/**
 * One wording of a topic that does not exist: `run`'s start-up check (assertTopicsExist) throws the
 * same error as the operator commands (missingTopicsError), and exits 2 like them.
 */
import type { Kafka } from "kafkajs";
import { describe, expect, it } from "vitest";
import { assertTopicsExist } from "../../../src/kafka/admin.js";
import { missingTopicsError } from "../../../src/kafka/missingTopicsError.js";
import { ReplayableError } from "../../../src/errors.js";

/** A KafkaJS client whose admin lists `topics` and records whether it was disconnected. */
function fakeKafka(topics: string[]) {
  const state = { disconnected: false };
  const admin = {
    connect: () => Promise.resolve(),
    listTopics: () => Promise.resolve(topics),
    disconnect: () => {
      state.disconnected = true;
      return Promise.resolve();
    },
  };
  return { kafka: { admin: () => admin } as unknown as Kafka, state };
}

describe("missingTopicsError", () => {
  it("names the topics, where they came from and the fix, in the singular and the plural", () => {
    expect(missingTopicsError(["orders"], "--topic").message).toBe(
      "topic orders (--topic) does not exist on the cluster; create it first or correct the name",
    );
    const many = missingTopicsError(["a", "b"], "REPLAYABLE_TOPICS");
    expect(many.message).toBe(
      "topics a, b (REPLAYABLE_TOPICS) do not exist on the cluster; create them first or correct the name",
    );
    expect([many.code, many.context]).toEqual(["CONFIG_INVALID", { missing: ["a", "b"] }]);
  });

  it("is what run's assertTopicsExist throws, after disconnecting its admin client", async () => {
    const { kafka, state } = fakeKafka(["present"]);
    const error = await assertTopicsExist(kafka, ["present", "absent"], "REPLAYABLE_TOPICS or --topic").catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReplayableError);
    const expected = missingTopicsError(["absent"], "REPLAYABLE_TOPICS or --topic");
    expect([(error as ReplayableError).message, (error as ReplayableError).context]).toEqual([
      expected.message,
      expected.context,
    ]);
    expect(state.disconnected).toBe(true);
    await expect(assertTopicsExist(fakeKafka(["present"]).kafka, ["present"], "x")).resolves.toBeUndefined();
  });
});
