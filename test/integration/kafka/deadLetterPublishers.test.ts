/**
 * Both DLQ publishers send the same records (issue 30): KafkaJS's DeadLetterPublisher and
 * @platformatic/kafka's PlatformaticDeadLetterPublisher, to the same broker, read back with
 * KafkaJS (patch 007 keeps repeated and null header values): the record's key, value and headers
 * exactly, repeated names and null values in order, then the DLQ headers; a keyed record on the
 * partition Java's producer picks; a missing DLQ topic refused at start.
 */
import { Partitioners } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DLQ_HEADERS,
  DeadLetterPublisher,
  type DeadLetterSink,
  type DeadLetterToPublish,
} from "../../../src/kafka/deadLetterPublisher.js";
import { KafkaAdmin } from "../../../src/kafka/admin.js";
import { PlatformaticDeadLetterPublisher } from "../../../src/kafka/platformatic/platformaticDeadLetterPublisher.js";
import { readTopic } from "../../../src/kafka/readTopic.js";
import type { KafkaRecord } from "../../../src/record.js";
import { BROKERS, testKafka, uniqueName } from "../../helpers/stack.js";

const publishers: Record<string, (topic: string) => Promise<DeadLetterSink>> = {
  kafkajs: (topic) => Promise.resolve(new DeadLetterPublisher(testKafka(), topic)),
  platformatic: (topic) =>
    Promise.resolve(
      new PlatformaticDeadLetterPublisher({ brokers: BROKERS, clientId: "replayable-test" }, topic),
    ),
};

/** A record as fetched from a source topic: headers name → values, null values allowed. */
function record(
  offset: string,
  key: string | null,
  value: string | null,
  headers: Record<string, (string | null)[]>,
): KafkaRecord {
  const h = Object.create(null) as Record<string, (Buffer | null)[]>;
  for (const [name, values] of Object.entries(headers))
    h[name] = values.map((v) => (v === null ? null : Buffer.from(v)));
  return {
    topic: "orders",
    partition: 2,
    offset,
    timestamp: "1700000000000",
    key: key === null ? null : Buffer.from(key),
    value: value === null ? null : Buffer.from(value),
    headers: h,
  };
}

const letters: DeadLetterToPublish[] = [
  {
    id: "11",
    projection: "ledger",
    code: "DECODE_FAILED",
    message: "value is not JSON",
    record: record("5", "order-7", "{not json", {
      trace: ["a", "b"],
      empty: [null],
      [DLQ_HEADERS.code]: ["the record's own"],
    }),
  },
  {
    id: "12",
    projection: "ledger",
    code: "RECORD_TOO_LARGE",
    message: "too large",
    record: record("6", null, null, {}),
  },
  {
    id: "13",
    projection: "ledger",
    code: "APPLY_FAILED",
    message: "x",
    record: record("7", "order-9", "{}", {}),
  },
];

/** The headers of a read record as name → text values (null kept). */
function texts(r: KafkaRecord): Record<string, (string | null)[]> {
  return Object.fromEntries(
    Object.entries(r.headers).map(([n, vs]) => [n, vs.map((v) => v?.toString() ?? null)]),
  );
}

describe.each(Object.keys(publishers))("dead letters published over %s", (client) => {
  let admin: KafkaAdmin;
  beforeAll(async () => {
    admin = await KafkaAdmin.connect(testKafka());
  });
  afterAll(async () => {
    await admin.close();
  });

  it("sends each record's key, value and headers exactly, then the DLQ headers; keyed ones where Java would", async () => {
    const topic = uniqueName(`dlq-${client}`);
    await admin.createTopic(topic, 3);
    const publisher = await publishers[client]!(topic);
    await publisher.start();
    try {
      await publisher.publish(letters);
    } finally {
      await publisher.stop();
    }
    const read = await readTopic(testKafka(), topic);
    expect(read).toHaveLength(3);
    const byId = new Map(read.map((r) => [texts(r)[DLQ_HEADERS.deadLetterId]![0], r]));
    const first = byId.get("11")!;
    expect(first.key?.toString()).toBe("order-7");
    expect(first.value?.toString()).toBe("{not json");
    expect(texts(first)).toEqual({
      trace: ["a", "b"],
      empty: [null],
      [DLQ_HEADERS.code]: ["the record's own", "DECODE_FAILED"],
      [DLQ_HEADERS.topic]: ["orders"],
      [DLQ_HEADERS.partition]: ["2"],
      [DLQ_HEADERS.offset]: ["5"],
      [DLQ_HEADERS.timestamp]: ["1700000000000"],
      [DLQ_HEADERS.projection]: ["ledger"],
      [DLQ_HEADERS.deadLetterId]: ["11"],
      [DLQ_HEADERS.message]: ["value is not JSON"],
    });
    const second = byId.get("12")!;
    expect(second.key).toBeNull();
    expect(second.value).toBeNull();
    // murmur2 of the key, as Java's and KafkaJS's default partitioners place it (3 partitions).
    expect(first.partition).toBe(javaPartition("order-7", 3));
    expect(byId.get("13")!.partition).toBe(javaPartition("order-9", 3));
  });

  it("refuses a DLQ topic that does not exist, naming it", async () => {
    const publisher = await publishers[client]!(uniqueName("absent-dlq"));
    try {
      await expect(publisher.start()).rejects.toThrow(/REPLAYABLE_DLQ_TOPIC\) does not exist/);
    } finally {
      await publisher.stop();
    }
  });
});

/**
 * Java's default partitioner for a keyed record (toPositive(murmur2(key)) % partitions), as
 * KafkaJS's DefaultPartitioner implements it.
 */
function javaPartition(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 1,
    partitionErrorCode: 0,
    replicas: [1],
    isr: [1],
    offlineReplicas: [],
  }));
  return Partitioners.DefaultPartitioner()({ topic: "t", partitionMetadata, message: { key, value: null } });
}
