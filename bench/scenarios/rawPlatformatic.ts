/**
 * Scenario `raw-platformatic`: the ceiling of the second client issue 30 brings in,
 * @platformatic/kafka, consuming the topic as `raw-1mib` does with KafkaJS: a consumer group from
 * the earliest offset, read_committed, 1 MiB per partition, offsets committed by the client, and
 * nothing done with a record but counting it. Information beside `raw-1mib` (no target uses it).
 * The client needs Node.js >= 22.22 or >= 24.6; it is imported only when this scenario runs.
 */
import { loadConfig } from "../../src/config.js";
import type { ScenarioSpec } from "../scenario.js";
import type { Tally } from "../tally.js";

/** A partition's records counted since the last flush. */
interface Pending {
  records: number;
  lastOffset: bigint;
  startedAt: number;
}

/**
 * Consumes until `tally` is done, then closes the consumer.
 * @throws Error when the member's settings ask for TLS or SASL (this scenario speaks plaintext only).
 */
export async function runRawPlatformatic(spec: ScenarioSpec, tally: Tally): Promise<void> {
  if (loadConfig(process.env).kafka.security.protocol !== "PLAINTEXT")
    throw new Error("raw-platformatic runs against a plaintext broker only (the local stack)");
  const { Consumer, FetchIsolationLevels, MessagesStreamModes, MessagesStreamFallbackModes } =
    await import("@platformatic/kafka");
  const consumer = new Consumer({
    groupId: spec.group,
    clientId: "replayable-bench-raw-platformatic",
    bootstrapBrokers: [...spec.brokers],
    // The group timings of raw-1mib (src/kafka/kafkaFeed.ts's consumer options).
    sessionTimeout: 30_000,
    rebalanceTimeout: 60_000,
    heartbeatInterval: 3000,
  });
  consumer.on("consumer:group:join", () => tally.joined());
  // The stream hands over one record at a time; they are counted per partition and handed to the
  // tally once per turn of the event loop, as KafkaJS hands over one batch per partition.
  const pending = new Map<number, Pending>();
  let flushScheduled = false;
  const flush = () => {
    flushScheduled = false;
    const endedAt = performance.now();
    for (const [partition, p] of pending)
      tally.add({
        partition,
        lastOffset: String(p.lastOffset),
        records: p.records,
        startedAt: p.startedAt,
        endedAt,
      });
    pending.clear();
  };
  try {
    const stream = await consumer.consume({
      topics: [spec.topic],
      mode: MessagesStreamModes.COMMITTED,
      fallbackMode: MessagesStreamFallbackModes.EARLIEST,
      isolationLevel: FetchIsolationLevels.READ_COMMITTED,
      autocommit: true,
      maxBytesPerPartition: spec.maxBytesPerPartition,
    });
    stream.on("data", (message: { partition: number; offset: bigint }) => {
      const p = pending.get(message.partition);
      if (p === undefined)
        pending.set(message.partition, {
          records: 1,
          lastOffset: message.offset,
          startedAt: performance.now(),
        });
      else {
        p.records += 1;
        p.lastOffset = message.offset;
      }
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
    await tally.done;
    await stream.close();
  } finally {
    await consumer.close(true);
  }
}
