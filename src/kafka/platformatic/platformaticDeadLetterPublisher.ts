/**
 * Publishing dead letters to the DLQ topic over @platformatic/kafka (issue 30): the same records as
 * the KafkaJS {@link DeadLetterPublisher} sends (src/kafka/deadLetterPublisher.ts): the record's own
 * key, value and headers exactly, repeated header names and null values included, then the
 * {@link DLQ_HEADERS}; acknowledged by all in-sync replicas, uncompressed, partitioned by key as
 * Java's producer does (murmur2 of the key; a record without a key round-robin).
 */
import type { Producer } from "@platformatic/kafka";
import { dlqHeaders, type DeadLetterSink, type DeadLetterToPublish } from "../deadLetterPublisher.js";
import { missingTopicsError } from "../missingTopicsError.js";
import { loadPlatformaticKafka, type PlatformaticKafka } from "./loadClient.js";
import type { PlatformaticSecurity } from "./platformaticSecurity.js";

/** Connection settings of the producer. */
export interface PlatformaticProducerOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** TLS and SASL (platformaticSecurity.ts); none: PLAINTEXT. */
  readonly security?: PlatformaticSecurity;
}

/**
 * A producer for one DLQ topic over @platformatic/kafka; `start()` and `stop()` are idempotent.
 * The library is loaded and the producer made at `start()`.
 */
export class PlatformaticDeadLetterPublisher implements DeadLetterSink {
  private client:
    { kafka: PlatformaticKafka; producer: Producer<Buffer, Buffer, Buffer, Buffer> } | undefined;
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  /** The next partition of a record without a key. */
  private roundRobin = 0;

  /** @param load loads the library (default {@link loadPlatformaticKafka}: only when the member starts). */
  constructor(
    private readonly options: PlatformaticProducerOptions,
    readonly topic: string,
    private readonly load: () => Promise<PlatformaticKafka> = loadPlatformaticKafka,
  ) {}

  /**
   * Loads the library, makes the producer and checks the topic exists (and so that a broker answers).
   * @throws ReplayableError CONFIG_INVALID when the topic does not exist, or this Node.js cannot
   *   run the library (loadPlatformaticKafka).
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      const kafka = await this.load();
      const producer = new kafka.Producer({
        clientId: this.options.clientId,
        bootstrapBrokers: [...this.options.brokers],
        ...this.options.security,
        // A few quick tries: a broker outage must not hold the partition back for long.
        retries: 3,
        retryDelay: 300,
        autocreateTopics: false,
      });
      this.client = { kafka, producer };
      const metadata = await producer.metadata({ topics: [this.topic] }).catch(() => undefined);
      if (metadata?.topics.has(this.topic) !== true)
        throw missingTopicsError([this.topic], "REPLAYABLE_DLQ_TOPIC");
    })();
    return this.started;
  }

  /**
   * Sends `letters` in one request, acknowledged by all in-sync replicas.
   * @throws the client's error once its retries are spent.
   */
  async publish(letters: readonly DeadLetterToPublish[]): Promise<void> {
    if (letters.length === 0) return;
    const client = this.client;
    if (client === undefined) throw new Error("PlatformaticDeadLetterPublisher: publish before start");
    const partitions = await this.partitionCount(client.producer);
    await client.producer.send({
      acks: client.kafka.ProduceAcks.ALL,
      compression: client.kafka.CompressionAlgorithms.NONE,
      messages: letters.map((letter) => ({
        topic: this.topic,
        key: letter.record.key ?? undefined,
        value: letter.record.value ?? (null as unknown as Buffer),
        headers: headerMap(letter),
        partition: this.partitionOf(client.kafka, letter.record.key, partitions),
      })),
    });
  }

  /** Disconnects. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      await this.started?.catch(() => undefined);
      await this.client?.producer.close();
    })();
    return this.stopped;
  }

  private async partitionCount(producer: Producer<Buffer, Buffer, Buffer, Buffer>): Promise<number> {
    const metadata = await producer.metadata({ topics: [this.topic] });
    return metadata.topics.get(this.topic)?.partitionsCount ?? 1;
  }

  /** Java's default partitioner for a keyed record (`toPositive(murmur2(key)) % partitions`), else round-robin. */
  private partitionOf(kafka: PlatformaticKafka, key: Buffer | null, partitions: number): number {
    if (key === null) return this.roundRobin++ % partitions;
    return (kafka.murmur2(key) & 0x7fffffff) % partitions;
  }
}

/**
 * {@link dlqHeaders} as the client's header map: one entry per value, each name a Buffer of its
 * own, so a name that repeats (KIP-82) stays as many headers in order (the client writes one header
 * per map entry), and a null value stays null (length -1 on the wire).
 */
function headerMap(letter: DeadLetterToPublish): Map<Buffer, Buffer> {
  const map = new Map<Buffer, Buffer>();
  const headers = dlqHeaders(letter) as Record<string, (Buffer | string | null)[]>;
  for (const name of Object.keys(headers))
    for (const value of headers[name]!)
      map.set(
        Buffer.from(name, "utf8"),
        (typeof value === "string" ? Buffer.from(value, "utf8") : value) as Buffer,
      );
  return map;
}
