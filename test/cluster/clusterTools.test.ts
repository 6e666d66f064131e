/**
 * The fault tools of test/helpers/cluster.ts against the local three-broker cluster: a topic at
 * replication factor 3 with min.insync.replicas 2; a leader moved without stopping anything (in
 * the same replica set, or with the old leader out of it and back); a
 * broker stopped (controlled shutdown) or killed (SIGKILL), a produce with acks=-1 still accepted
 * by the two replicas left, and the broker back in the ISR after a restart.
 */
import { afterEach, describe, expect, it } from "vitest";
import { KafkaAdmin } from "../../src/kafka/admin.js";
import { produceRecords } from "../../src/kafka/producer.js";
import {
  createReplicatedTopic,
  ensureAllBrokersUp,
  killBroker,
  leaderOf,
  liveBrokerIds,
  moveLeader,
  partitionState,
  quietKafka,
  reassignPartition,
  restartBroker,
  stopBroker,
  topicConfig,
  topicState,
  waitForInSync,
  waitForLeaderOff,
} from "../helpers/cluster.js";
import { uniqueName } from "../helpers/stack.js";

afterEach(ensureAllBrokersUp);

/** Sends `count` records to `partition` with acks=-1 (produceRecords waits for all in-sync replicas). */
async function produce(topic: string, partition: number, count: number, tag: string): Promise<void> {
  await produceRecords(
    quietKafka(),
    topic,
    Array.from({ length: count }, (_, i) => ({ key: null, value: `${tag}-${i}`, partition })),
  );
}

async function highWatermark(topic: string, partition: number): Promise<string> {
  const admin = await KafkaAdmin.connect(quietKafka());
  try {
    return (await admin.topicOffsets(topic)).find((p) => p.partition === partition)!.highWatermark;
  } finally {
    await admin.close();
  }
}

describe("cluster fault tools", () => {
  it("the cluster has three brokers; createReplicatedTopic gives every partition 3 in-sync replicas and min.insync.replicas 2", async () => {
    expect(await liveBrokerIds()).toEqual([1, 2, 3]);
    const topic = uniqueName("rf3");
    await createReplicatedTopic(topic, 3);
    const state = await topicState(topic);
    expect(state.map((p) => p.partition)).toEqual([0, 1, 2]);
    for (const p of state) {
      expect([...p.replicas].sort()).toEqual([1, 2, 3]);
      expect([...p.isr].sort()).toEqual([1, 2, 3]);
      expect(p.replicas).toContain(p.leader);
    }
    expect(await topicConfig(topic, "min.insync.replicas")).toBe("2");
  });

  it("moveLeader makes another broker the leader, twice, with the replica set and ISR unchanged", async () => {
    const topic = uniqueName("move");
    await createReplicatedTopic(topic, 2);
    await produce(topic, 0, 50, "before");
    const first = await leaderOf(topic, 0);
    const others = [1, 2, 3].filter((id) => id !== first);
    for (const target of others) {
      const moved = await moveLeader(topic, 0, target);
      expect(moved.leader).toBe(target);
      expect(moved.replicas[0]).toBe(target);
      expect([...moved.replicas].sort()).toEqual([1, 2, 3]);
      expect(await leaderOf(topic, 0)).toBe(target);
    }
    // The new leader serves produce requests.
    await produce(topic, 0, 50, "after");
    expect(await highWatermark(topic, 0)).toBe("100");
    // Moving to the broker that leads already changes nothing.
    expect((await moveLeader(topic, 0, others[1]!)).leader).toBe(others[1]);
  });

  it("reassignPartition takes the leader out of the replica set (another broker leads) and puts it back as a follower", async () => {
    const topic = uniqueName("reassign");
    await createReplicatedTopic(topic, 1);
    await produce(topic, 0, 100, "before");
    const { leader: from, replicas } = await partitionState(topic, 0);
    const [to, third] = replicas.filter((id) => id !== from);
    const without = await reassignPartition(topic, 0, [to!, third!]);
    expect(without.leader).toBe(to);
    expect(without.replicas).toEqual([to, third]);
    expect(without.isr).not.toContain(from);
    const restored = await reassignPartition(topic, 0, [to!, third!, from]);
    expect(restored.leader).toBe(to);
    expect(restored.replicas).toEqual([to, third, from]);
    await waitForInSync(topic, from);
    await produce(topic, 0, 100, "after");
    expect(await highWatermark(topic, 0)).toBe("200");
  });

  it("a killed broker: its leaders move off, a produce with acks=-1 succeeds with 2 in-sync replicas, and after a restart it rejoins the ISR", async () => {
    const topic = uniqueName("kill");
    await createReplicatedTopic(topic, 3);
    await produce(topic, 0, 100, "before");
    const victim = await leaderOf(topic, 0);

    await killBroker(victim);
    // Fenced after broker.session.timeout.ms, then its leaders move and it leaves every ISR.
    const after = await waitForLeaderOff(topic, victim);
    for (const p of after) {
      expect(p.isr).not.toContain(victim);
      expect(p.isr).toHaveLength(2);
    }
    await produce(topic, 0, 100, "while-down");
    expect(await highWatermark(topic, 0)).toBe("200");
    expect(await liveBrokerIds()).not.toContain(victim);

    await restartBroker(victim);
    const back = await waitForInSync(topic, victim);
    for (const p of back) expect([...p.isr].sort()).toEqual([1, 2, 3]);
    expect(await liveBrokerIds()).toEqual([1, 2, 3]);
    expect(await highWatermark(topic, 0)).toBe("200");
  });

  it("a stopped broker (controlled shutdown) hands its leaders over before it exits; restarted, it rejoins the ISR", async () => {
    const topic = uniqueName("stop");
    await createReplicatedTopic(topic, 3);
    const victim = await leaderOf(topic, 1);

    await stopBroker(victim);
    // A controlled shutdown moves the leaders before the process exits: no wait for a session timeout.
    const state = await partitionState(topic, 1);
    expect(state.leader).not.toBe(victim);
    expect(state.leader).toBeGreaterThan(0);
    await produce(topic, 1, 100, "while-stopped");
    expect(await highWatermark(topic, 1)).toBe("100");

    await restartBroker(victim);
    await waitForInSync(topic, victim);
    expect(await liveBrokerIds()).toEqual([1, 2, 3]);
  });
});
