/** Producing records (for `replayable produce`, the demo and tests). */
import { CompressionTypes, Partitioners, type Kafka } from "kafkajs";

/** A record to send: key and value as text or bytes (null allowed), headers as text or bytes. */
export interface ProducerRecord {
  readonly key: string | Buffer | null;
  readonly value: string | Buffer | null;
  readonly headers?: Readonly<Record<string, string | Buffer>>;
  /** Send to this partition instead of the key's default partition. */
  readonly partition?: number;
}

/** Options of {@link produceRecords}. */
export interface ProduceOptions {
  /** Records per producer request. Default 1000. */
  readonly batchSize?: number;
  /**
   * The idempotent producer (KIP-98): the broker drops a request the producer retried after it
   * had written it (e.g. after NOT_LEADER_OR_FOLLOWER on a topic created a moment ago), so the
   * topic holds each record once. Default false: duplicates in the stream are the caller's
   * choice, and `replayable produce` and the tests send what they were given, retries included.
   */
  readonly idempotent?: boolean;
}

/**
 * Sends `records` to `topic` in order, `batchSize` at a time, acks from all in-sync replicas.
 * @returns how many records were sent.
 */
export async function produceRecords(
  kafka: Kafka,
  topic: string,
  records: readonly ProducerRecord[],
  options: ProduceOptions = {},
): Promise<number> {
  const batchSize = options.batchSize ?? 1000;
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
    idempotent: options.idempotent ?? false,
    maxInFlightRequests: 1,
    // A topic created a moment ago may not have its leaders in every broker's metadata yet
    // (UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition"): retry longer.
    retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 5000 },
  });
  await producer.connect();
  try {
    for (let i = 0; i < records.length; i += batchSize) {
      await producer.send({
        topic,
        acks: -1,
        compression: CompressionTypes.None,
        messages: records.slice(i, i + batchSize).map((r) => ({
          key: r.key,
          value: r.value,
          headers: r.headers === undefined ? undefined : { ...r.headers },
          partition: r.partition,
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
  return records.length;
}
