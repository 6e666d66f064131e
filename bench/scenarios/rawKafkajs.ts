/**
 * Scenarios `raw` and `raw-1mib`, the ceiling in Node: KafkaJS consuming the topic with a no-op
 * eachBatch handler (offsets auto-resolved and auto-committed), with the consumer options of the
 * replayable member and the fetch size per partition of the spec (replayable's own, or 1 MiB).
 */
import type { Logger } from "pino";
import { loadConfig } from "../../src/config.js";
import { createKafka } from "../../src/kafka/client.js";
import type { ScenarioSpec } from "../scenario.js";
import type { Tally } from "../tally.js";

/** Consumes until `tally` is done, then leaves the group. */
export async function runRawKafkajs(spec: ScenarioSpec, tally: Tally, log: Logger): Promise<void> {
  const kafka = createKafka({
    brokers: spec.brokers,
    clientId: "replayable-bench-raw",
    log,
    security: loadConfig(process.env).kafka.security,
  });
  // The consumer options of src/kafka/kafkaFeed.ts, so only the handler differs.
  const consumer = kafka.consumer({
    groupId: spec.group,
    sessionTimeout: 30_000,
    rebalanceTimeout: 60_000,
    heartbeatInterval: 3000,
    maxBytesPerPartition: spec.maxBytesPerPartition,
    allowAutoTopicCreation: false,
  });
  consumer.on(consumer.events.GROUP_JOIN, () => tally.joined());
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [spec.topic], fromBeginning: true });
    await consumer.run({
      partitionsConsumedConcurrently: spec.partitionsConsumedConcurrently,
      eachBatch: ({ batch }) => {
        const startedAt = performance.now();
        if (batch.messages.length > 0) {
          tally.add({
            partition: batch.partition,
            lastOffset: batch.lastOffset(),
            records: batch.messages.length,
            startedAt,
            endedAt: performance.now(),
          });
        }
        return Promise.resolve();
      },
    });
    await tally.done;
  } finally {
    await consumer.disconnect();
  }
}
