/**
 * Publishing dead letters to a DLQ topic (REPLAYABLE_DLQ_TOPIC), after the database COMMIT that
 * stored them: the record's own key, value and headers, plus headers naming where it came from
 * and why it failed (in the manner of Kafka Connect's `errors.deadletterqueue.context.headers.enable`).
 * The database row stays the source of truth; a failed publish is the caller's to log and count.
 */
import { CompressionTypes, Partitioners, type IHeaders, type Kafka, type Producer } from "kafkajs";
import type { KafkaRecord } from "../record.js";
import { assertTopicsExist } from "./admin.js";

/** A dead letter to publish. */
export interface DeadLetterToPublish {
  /** Its id in replayable.dead_letters. */
  readonly id: string;
  readonly projection: string;
  readonly record: KafkaRecord;
  readonly code: string;
  readonly message: string;
}

/** Header names added to every published dead letter. */
export const DLQ_HEADERS = {
  topic: "replayable.source.topic",
  partition: "replayable.source.partition",
  offset: "replayable.source.offset",
  timestamp: "replayable.source.timestamp",
  projection: "replayable.projection",
  deadLetterId: "replayable.dead_letter.id",
  code: "replayable.error.code",
  message: "replayable.error.message",
} as const;

/**
 * What publishes dead letters to the DLQ topic, whichever Kafka client carries it:
 * {@link DeadLetterPublisher} (KafkaJS) or `PlatformaticDeadLetterPublisher`
 * (src/kafka/platformatic/platformaticDeadLetterPublisher.ts; issue 30). Both send the same records
 * (test/integration/kafka/deadLetterPublishers.test.ts).
 */
export type DeadLetterSink = Pick<DeadLetterPublisher, "topic" | "start" | "publish" | "stop">;

/** A producer for one DLQ topic over KafkaJS; `start()` and `stop()` are idempotent. */
export class DeadLetterPublisher {
  private readonly producer: Producer;
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    readonly topic: string,
  ) {
    this.producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      // A few quick tries: a broker outage must not hold the partition back for long.
      retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 5000 },
    });
  }

  /**
   * Checks the topic exists and connects.
   * @throws ReplayableError CONFIG_INVALID when the topic does not exist.
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      await assertTopicsExist(this.kafka, [this.topic], "REPLAYABLE_DLQ_TOPIC");
      await this.producer.connect();
    })();
    return this.started;
  }

  /**
   * Sends `letters` in one request, acknowledged by all in-sync replicas.
   * @throws the KafkaJS error once its retries are spent.
   */
  async publish(letters: readonly DeadLetterToPublish[]): Promise<void> {
    if (letters.length === 0) return;
    await this.producer.send({
      topic: this.topic,
      acks: -1,
      compression: CompressionTypes.None,
      messages: letters.map((letter) => ({
        key: letter.record.key,
        value: letter.record.value,
        headers: dlqHeaders(letter),
      })),
    });
  }

  /** Disconnects. */
  stop(): Promise<void> {
    this.stopped ??= this.producer.disconnect();
    return this.stopped;
  }
}

/**
 * The record's headers exactly (repeated values kept, null values sent as null: length -1 on the
 * wire, KafkaJS patch 007), then {@link DLQ_HEADERS}, each added after the record's own values of
 * that name, as Kafka Connect adds its context headers: a record that already carries a header
 * named like one of ours keeps it, and ours is the last value (Java's `Headers.lastHeader`). The
 * object has no prototype, so a header named `__proto__` is sent like any other.
 */
export function dlqHeaders(letter: DeadLetterToPublish): IHeaders {
  const headers = Object.create(null) as Record<string, (Buffer | string | null)[]>;
  for (const name of Object.keys(letter.record.headers)) headers[name] = [...letter.record.headers[name]!];
  const add = (name: string, value: string) => {
    if (Object.hasOwn(headers, name)) headers[name]!.push(value);
    else headers[name] = [value];
  };
  const { record } = letter;
  add(DLQ_HEADERS.topic, record.topic);
  add(DLQ_HEADERS.partition, String(record.partition));
  add(DLQ_HEADERS.offset, record.offset);
  add(DLQ_HEADERS.timestamp, record.timestamp);
  add(DLQ_HEADERS.projection, letter.projection);
  add(DLQ_HEADERS.deadLetterId, letter.id);
  add(DLQ_HEADERS.code, letter.code);
  add(DLQ_HEADERS.message, letter.message);
  return headers;
}
