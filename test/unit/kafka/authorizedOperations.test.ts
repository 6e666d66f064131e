/**
 * KafkaJS patch 011 (patches/README.md): Metadata v8 with the topics' authorized operations
 * (KIP-430), which the start-up check reads to find a missing Write on the DLQ topic before the
 * first dead letter. KafkaJS 2.2.4 stops at Metadata v6 and has no way to ask. The request and
 * response are checked against the layout of Kafka's MetadataRequest.json and
 * MetadataResponse.json (version 8), built with KafkaJS's own encoder.
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { missingTopicOperation } from "../../../src/kafka/securityFailure.js";

const require = createRequire(import.meta.url);

interface EncoderLike {
  writeInt16(v: number): EncoderLike;
  writeInt32(v: number): EncoderLike;
  writeString(v: string | null): EncoderLike;
  writeBoolean(v: boolean): EncoderLike;
  writeArray(v: unknown[]): EncoderLike;
  writeEncoder(v: EncoderLike): EncoderLike;
  writeNullableArray(v: unknown[] | null): EncoderLike;
  buffer: Buffer;
}
const Encoder = require("kafkajs/src/protocol/encoder.js") as new () => EncoderLike;
const Metadata = require("kafkajs/src/protocol/requests/metadata/index.js") as {
  versions: string[];
  authorizedOperations?: (options: { topics: string[] }) => {
    request: { apiVersion: number; apiKey: number; encode(): Promise<EncoderLike> };
    response: { decode(raw: Buffer): Promise<Record<string, unknown>>; parse(d: unknown): Promise<unknown> };
  };
};

/** A Metadata v8 response of one topic with one partition, as a broker encodes it. */
function responseV8(topic: string, errorCode: number, operations: number): Buffer {
  const partition = new Encoder()
    .writeInt16(0)
    .writeInt32(0)
    .writeInt32(1)
    .writeInt32(7)
    .writeArray([1])
    .writeArray([1])
    .writeArray([]);
  const topicEntry = new Encoder()
    .writeInt16(errorCode)
    .writeString(topic)
    .writeBoolean(false)
    .writeInt32(1)
    .writeEncoder(partition)
    .writeInt32(operations);
  const broker = new Encoder().writeInt32(1).writeString("127.0.0.1").writeInt32(9092).writeString(null);
  return new Encoder()
    .writeInt32(0)
    .writeInt32(1)
    .writeEncoder(broker)
    .writeString("cluster-1")
    .writeInt32(1)
    .writeInt32(1)
    .writeEncoder(topicEntry)
    .writeInt32(-2147483648).buffer;
}

describe("KafkaJS patch 011: Metadata v8 authorized operations (KIP-430)", () => {
  it("asks for the topics' authorized operations in a v8 request, without changing the negotiated versions", async () => {
    expect(Metadata.authorizedOperations).toBeTypeOf("function");
    const { request } = Metadata.authorizedOperations!({ topics: ["dlq"] });
    expect(request.apiVersion).toBe(8);
    expect(request.apiKey).toBe(3);
    const expected = new Encoder()
      .writeNullableArray(["dlq"])
      .writeBoolean(false) // allow_auto_topic_creation
      .writeBoolean(false) // include_cluster_authorized_operations
      .writeBoolean(true).buffer; // include_topic_authorized_operations
    expect((await request.encode()).buffer).toEqual(expected);
    // Every other metadata request keeps the versions KafkaJS 2.2.4 negotiates.
    expect(Metadata.versions).toEqual(["0", "1", "2", "3", "4", "5", "6"]);
  });

  it("decodes each topic's authorized operations, with the partitions' leader epochs", async () => {
    const { response } = Metadata.authorizedOperations!({ topics: ["dlq"] });
    const decoded = await response.decode(responseV8("dlq", 0, (1 << 3) | (1 << 8)));
    await expect(response.parse(decoded)).resolves.toBeDefined();
    expect(decoded).toMatchObject({
      clusterId: "cluster-1",
      brokers: [{ nodeId: 1, host: "127.0.0.1", port: 9092, rack: null }],
      topicMetadata: [
        {
          topic: "dlq",
          topicAuthorizedOperations: (1 << 3) | (1 << 8),
          partitionMetadata: [{ partitionId: 0, leader: 1, leaderEpoch: 7, replicas: [1], isr: [1] }],
        },
      ],
      clusterAuthorizedOperations: -2147483648,
    });
  });

  it("throws the topic's error, as the other metadata versions do", async () => {
    const { response } = Metadata.authorizedOperations!({ topics: ["dlq"] });
    const decoded = await response.decode(responseV8("dlq", 29, -2147483648));
    await expect(response.parse(decoded)).rejects.toMatchObject({ type: "TOPIC_AUTHORIZATION_FAILED" });
  });
});

describe("a missing topic operation", () => {
  it("names the operation, the topic, the principal and the kafka-acls command", () => {
    const error = missingTopicOperation("orders.dlq", "Write", {
      brokers: ["broker-1:9093"],
      security: {
        sasl: { mechanism: "SCRAM-SHA-512", username: "bob", password: "secret" },
      } as never,
    });
    expect(error.code).toBe("KAFKA_AUTHORIZATION");
    expect(error.message).toBe(
      "Kafka refused Write on topic 'orders.dlq' (not among the principal's authorized operations of the topic, KIP-430) for User:bob: grant it with kafka-acls --bootstrap-server broker-1:9093 --add --allow-principal User:bob --operation Write --topic orders.dlq; docs/security.md lists the ACLs each command needs",
    );
  });
});
