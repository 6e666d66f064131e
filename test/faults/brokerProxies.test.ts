/**
 * The stage of the fault tests itself: a client that bootstraps through the broker proxies is
 * handed the proxies' addresses and reaches every broker only through them, while the tests' own
 * clients (the INTERNAL listeners) keep working when a proxy goes silent.
 */
import { expect, it } from "vitest";
import { Kafka, logLevel } from "kafkajs";
import {
  createReplicatedTopic,
  FAULT_PROXY_BROKERS,
  liveBrokerIds,
  partitionState,
  useBrokerProxies,
} from "../helpers/faultCluster.js";
import { uniqueName } from "../helpers/stack.js";

const stage = useBrokerProxies();

it("hands a client that bootstraps through the proxies the proxies' addresses, and works through them", async () => {
  const kafka = new Kafka({
    clientId: "faults-stage",
    brokers: stage.bootstrap.split(","),
    logLevel: logLevel.NOTHING,
    retry: { retries: 2 },
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { brokers } = await admin.describeCluster();
    expect(brokers.map((b) => `${b.host}:${b.port}`).sort()).toEqual([...FAULT_PROXY_BROKERS]);
    const topic = uniqueName("stage");
    await createReplicatedTopic(topic, 3);
    // A metadata request to every broker opens a connection through each proxy.
    const offsets = await admin.fetchTopicOffsets(topic);
    expect(offsets).toHaveLength(3);
    expect([1, 2, 3].map((id) => stage.brokerProxy(id).openConnections > 0)).toEqual([true, true, true]);
  } finally {
    await admin.disconnect();
  }
});

it("keeps the tests' own view of the cluster while a broker proxy is silent", async () => {
  const topic = uniqueName("stage");
  await createReplicatedTopic(topic, 1);
  stage.brokerProxy(1).setMode("silent");
  stage.brokerProxy(2).setMode("reset");
  expect(await liveBrokerIds()).toEqual([1, 2, 3]);
  expect((await partitionState(topic, 0)).isr).toHaveLength(3);
});
