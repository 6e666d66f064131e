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

/** A producer for one DLQ topic; `start()` and `stop()` are idempotent. */
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

/** The record's headers (repeated values kept) plus {@link DLQ_HEADERS}. */
export function dlqHeaders(letter: DeadLetterToPublish): IHeaders {
  const headers: IHeaders = {};
  for (const [name, values] of Object.entries(letter.record.headers)) headers[name] = [...values];
  const { record } = letter;
  headers[DLQ_HEADERS.topic] = record.topic;
  headers[DLQ_HEADERS.partition] = String(record.partition);
  headers[DLQ_HEADERS.offset] = record.offset;
  headers[DLQ_HEADERS.timestamp] = record.timestamp;
  headers[DLQ_HEADERS.projection] = letter.projection;
  headers[DLQ_HEADERS.deadLetterId] = letter.id;
  headers[DLQ_HEADERS.code] = letter.code;
  headers[DLQ_HEADERS.message] = letter.message;
  return headers;
}
