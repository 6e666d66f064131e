/**
 * The admin operations give the same answers over both Kafka clients (issue 30): KafkaJS's
 * KafkaAdmin and @platformatic/kafka's PlatformaticAdmin, against the same broker, each checked
 * against what the test wrote (records produced per partition, offsets set, a member joined), not
 * only against the other.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaAdmin, type ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { testKafka, testPlatformaticAdmin, uniqueName, waitFor } from "../../helpers/stack.js";

const clients: Record<string, () => Promise<ClusterAdmin>> = {
  kafkajs: () => KafkaAdmin.connect(testKafka()),
  platformatic: async () => testPlatformaticAdmin(),
};

describe.each(Object.keys(clients))("ClusterAdmin over %s", (client) => {
  let admin: ClusterAdmin;
  beforeAll(async () => {
    admin = await clients[client]!();
  });
  afterAll(async () => {
    await admin.close();
  });

  it("creates a topic once, lists it and reads its log start offset and high watermark per partition", async () => {
    const topic = uniqueName(`admin-${client}`);
    expect(await admin.topicExists(topic)).toBe(false);
    expect(await admin.createTopic(topic, 3)).toBe(true);
    expect(await admin.createTopic(topic, 3)).toBe(false);
    expect(await admin.topicExists(topic)).toBe(true);
    expect(await admin.listTopics()).toContain(topic);
    // 5, 0 and 2 records on partitions 0, 1 and 2.
    const records = [0, 0, 0, 0, 0, 2, 2].map((partition, i) => ({
      key: `k${i}`,
      value: `v${i}`,
      partition,
    }));
    // Idempotent: a send retried after NOT_LEADER_OR_FOLLOWER on a topic made a moment ago is written once.
    await produceRecords(testKafka(), topic, records, { idempotent: true });
    expect(await admin.topicOffsets(topic)).toEqual([
      { partition: 0, logStartOffset: "0", highWatermark: "5" },
      { partition: 1, logStartOffset: "0", highWatermark: "0" },
      { partition: 2, logStartOffset: "0", highWatermark: "2" },
    ]);
    await admin.deleteRecords(topic, [{ partition: 0, offset: "3" }]);
    expect((await admin.topicOffsets(topic))[0]).toEqual({
      partition: 0,
      logStartOffset: "3",
      highWatermark: "5",
    });
    await admin.deleteTopics([topic]);
    await waitFor("the topic to be deleted", async () =>
      (await admin.topicExists(topic)) ? undefined : true,
    );
  });

  it("sets an inactive group's offsets, reads them back, and deletes the group", async () => {
    const topic = uniqueName(`admin-${client}`);
    const group = uniqueName("g");
    await admin.createTopic(topic, 2);
    await produceRecords(
      testKafka(),
      topic,
      [0, 0, 0, 1].map((partition, i) => ({ key: null, value: `v${i}`, partition })),
      { idempotent: true },
    );
    expect(await admin.committedOffsets(group, [topic])).toEqual([
      { topic, partition: 0, offset: "-1" },
      { topic, partition: 1, offset: "-1" },
    ]);
    await admin.setOffsets(group, topic, [{ partition: 0, offset: "2" }]);
    expect(await admin.committedOffsets(group, [topic])).toEqual([
      { topic, partition: 0, offset: "2" },
      { topic, partition: 1, offset: "-1" },
    ]);
    expect(await admin.groupCommittedOffsets(group)).toEqual([{ topic, partition: 0, offset: "2" }]);
    expect(await admin.describeGroup(group)).toEqual({ state: "Empty", members: [] });
    expect(await admin.deleteGroup(group)).toBe("deleted");
    expect(await admin.deleteGroup(group)).toBe("absent");
    expect(await admin.groupCommittedOffsets(group)).toEqual([]);
  });

  it("refuses to set the offsets of a group with a member, describes it, and keeps it", async () => {
    const topic = uniqueName(`admin-${client}`);
    const group = uniqueName("g");
    await admin.createTopic(topic, 1);
    const consumer = testKafka().consumer({ groupId: group });
    await consumer.connect();
    try {
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({ eachMessage: async () => {} });
      const described = await waitFor("the member to join", async () => {
        const d = await admin.describeGroup(group);
        return d.state === "Stable" && d.members.length === 1 ? d : undefined;
      });
      expect(described.members[0]!.clientId).toBe("replayable-test");
      await expect(admin.setOffsets(group, topic, [{ partition: 0, offset: "0" }])).rejects.toThrow();
      expect(await admin.deleteGroup(group)).toBe("has-members");
    } finally {
      await consumer.disconnect();
    }
  });

  it("reads each topic's cleanup policy and the offsets of a time", async () => {
    const compacted = uniqueName(`admin-${client}-c`);
    const plain = uniqueName(`admin-${client}-d`);
    await admin.createTopic(compacted, 1, { "cleanup.policy": "compact" });
    await admin.createTopic(plain, 1);
    expect(await admin.cleanupPolicies([compacted, plain])).toEqual(
      new Map([
        [compacted, "compact"],
        [plain, "delete"],
      ]),
    );
    const before = Date.now();
    await produceRecords(testKafka(), plain, [{ key: null, value: "a", partition: 0 }], { idempotent: true });
    expect(await admin.offsetsForTimestamp(plain, before - 60_000)).toEqual([{ partition: 0, offset: "0" }]);
    // After the last record: the high watermark.
    expect(await admin.offsetsForTimestamp(plain, Date.now() + 60_000)).toEqual([
      { partition: 0, offset: "1" },
    ]);
  });
});
