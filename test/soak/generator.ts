/**
 * The soak's producer (Jepsen's generator/client): a seeded ledger stream
 * ({@link generateLedgerStream}, with re-sends: the same `ce_id` and bytes at a new offset) sent to
 * the topic at a steady rate while the nemesis runs. A send that fails is retried with the same
 * records until it succeeds: its outcome was unknown, so the records may now be in the log twice,
 * which is one more re-send of the same events (the ledger dedupes by `ce_id`). Every send is in the
 * history with the offsets the brokers gave it, every failure with its error.
 *
 * KafkaJS 2.2.4's `send()` can resolve without having written the records of one partition: when
 * a partition's leader moves during a send, the retry skips every broker that answered the first
 * attempt (`brokersWithoutResponse` in kafkajs/src/producer/sendMessages.js), so a partition that
 * moved to such a broker is never sent, and its RecordMetadata is simply missing from the result.
 * The soak found this (seed 1, a leader reassignment). So each record's partition is computed here
 * with KafkaJS's own DefaultPartitioner (murmur2 of the key, as the brokers' clients do) and set
 * on the message, and a send whose result lacks one of its partitions is written to the history
 * (`produce-incomplete`) and those records are sent again.
 *
 * The checker does not trust this producer's view: the model is computed from what the log holds
 * ({@link readLog} in checker.ts). This producer's acknowledged event ids are checked against
 * the log only to tell a record Kafka lost from one the consumer lost.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { CompressionTypes, Partitioners, type Kafka, type Producer } from "kafkajs";
import type { OutgoingRecord } from "../../src/projections/ledger/generate.js";
import { errorMessage } from "../../src/errors.js";
import type { History } from "./history.js";

/** Options of {@link LedgerProducer}. */
export interface LedgerProducerOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  /** The stream to send, in order (re-sends included). */
  readonly records: readonly OutgoingRecord[];
  /** Records per second to aim at. */
  readonly ratePerSecond: number;
  /** Partitions of the topic (to compute each record's partition as KafkaJS's DefaultPartitioner does). */
  readonly partitions: number;
  /** Records per send; default 20. */
  readonly batchSize?: number;
  readonly history: History;
}

/** A paced producer of a ledger stream; {@link start} then {@link stop}. */
export class LedgerProducer {
  #producer: Producer | undefined;
  #loop: Promise<void> | undefined;
  #stopping = false;
  #next = 0;
  /** ce_id of every record a send was acknowledged for. */
  readonly acked = new Set<string>();
  /** Sends that failed (each was retried). */
  failures = 0;
  /** Sends that resolved without a partition's acknowledgement (its records were sent again). */
  incomplete = 0;

  constructor(private readonly options: LedgerProducerOptions) {}

  /** Records sent and acknowledged so far (from the start of the stream). */
  get sent(): number {
    return this.#next;
  }

  /** Connects and starts sending in the background. */
  async start(): Promise<void> {
    this.#producer = this.options.kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      idempotent: false,
      maxInFlightRequests: 1,
      retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    await this.#producer.connect();
    this.#loop = this.#run();
  }

  /**
   * Stops after the send in flight has been acknowledged (it is retried until then), and
   * disconnects. Idempotent.
   * @returns the number of records of the stream that were sent.
   */
  async stop(): Promise<number> {
    this.#stopping = true;
    await this.#loop;
    this.#loop = undefined;
    await this.#producer?.disconnect().catch(() => undefined);
    this.#producer = undefined;
    return this.#next;
  }

  async #run(): Promise<void> {
    const { records, history, topic, partitions } = this.options;
    const batchSize = this.options.batchSize ?? 20;
    const partitioner = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: partitions }, (_, i) => ({
      partitionId: i,
      leader: 0,
      replicas: [],
      isr: [],
      partitionErrorCode: 0,
    }));
    const partitionOf = (r: OutgoingRecord) =>
      partitioner({ topic, partitionMetadata, message: { key: r.key, value: r.value } });
    const intervalMs = (1000 * batchSize) / this.options.ratePerSecond;
    let due = Date.now();
    while (!this.#stopping && this.#next < records.length) {
      const batch = records.slice(this.#next, this.#next + batchSize);
      let pending = batch.map((r) => ({ record: r, partition: partitionOf(r) }));
      let attempt = 0;
      while (pending.length > 0) {
        attempt += 1;
        try {
          const meta = await this.#producer!.send({
            topic,
            acks: -1,
            compression: CompressionTypes.None,
            messages: pending.map(({ record: r, partition }) => ({
              key: r.key,
              value: r.value,
              headers: { ...r.headers },
              partition,
            })),
          });
          const answered = new Set(meta.map((m) => m.partition));
          const missing = [...new Set(pending.map((p) => p.partition))].filter((p) => !answered.has(p));
          history.write(missing.length === 0 ? "produce" : "produce-incomplete", {
            from: this.#next,
            count: pending.length,
            attempt,
            offsets: meta.map((m) => ({ partition: m.partition, baseOffset: m.baseOffset })),
            ...(missing.length === 0 ? {} : { missing }),
          });
          if (missing.length > 0) this.incomplete += 1;
          pending = pending.filter((p) => missing.includes(p.partition));
        } catch (error) {
          this.failures += 1;
          history.write("produce-error", {
            from: this.#next,
            count: batch.length,
            attempt,
            error: errorMessage(error),
          });
          // Retried even while stopping: the records of an unacknowledged send may or may not be in
          // the log, and the soak ends with every send acknowledged.
          await sleep(Math.min(5000, 500 * attempt));
        }
      }
      for (const r of batch) this.acked.add(r.headers.ce_id!);
      this.#next += batch.length;
      due += intervalMs;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      else due = Date.now(); // behind (a slow broker): do not burst to catch up
    }
  }
}
