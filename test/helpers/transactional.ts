/**
 * A transactional producer for tests: begin, send, commit or abort, as Kafka Streams, Flink or any
 * `transactional.id` producer writes (KIP-98). Each `send` is one produce request, so one record
 * batch in the log; a commit or an abort writes a control batch (the transaction marker).
 */
import { createRequire } from "node:module";
import { pino, type DestinationStream } from "pino";
import { createKafka } from "../../src/kafka/client.js";
import { createLogger } from "../../src/logger.js";
import { BROKERS, uniqueName } from "./stack.js";

/**
 * KafkaJS's wording of the protocol error CONCURRENT_TRANSACTIONS (code 51), from its own table of
 * protocol errors (`src/protocol/error.js`), as src/kafka/client.ts reads the rebalance ones.
 */
const CONCURRENT_TRANSACTIONS = (() => {
  const { errorCodes } = createRequire(import.meta.url)("kafkajs/src/protocol/error.js") as {
    errorCodes: readonly { type: string; message: string }[];
  };
  const entry = errorCodes.find((e) => e.type === "CONCURRENT_TRANSACTIONS");
  if (entry === undefined) throw new Error("KafkaJS's protocol error table has no CONCURRENT_TRANSACTIONS");
  return entry.message;
})();

/**
 * True for the two lines KafkaJS logs at error level each time it retries a send that the
 * transaction coordinator answered with CONCURRENT_TRANSACTIONS: Connection's failed
 * `Response AddPartitionsToTxn(…)` and the producer's `Failed to send messages: …` with its
 * retryCount. The coordinator answers so while the previous transaction of the same
 * transactional id is still completing (its markers being written after EndTxn returned), and
 * expects the client to retry: Kafka's Java TransactionManager retries the first AddPartitionsToTxn
 * of a transaction after 20 ms (ADD_PARTITIONS_RETRY_BACKOFF_MS, KAFKA-5482). If KafkaJS's retries
 * run out, `send` rejects and the test fails with that error, so hiding the lines hides no fault.
 */
function isRetriedConcurrentTransactions(entry: {
  namespace?: unknown;
  error?: unknown;
  msg?: unknown;
}): boolean {
  if (entry.namespace === "Connection")
    return (
      entry.error === CONCURRENT_TRANSACTIONS && String(entry.msg).startsWith("Response AddPartitionsToTxn")
    );
  return (
    entry.namespace === "Producer" && entry.msg === `Failed to send messages: ${CONCURRENT_TRANSACTIONS}`
  );
}

/** `inner` without the lines of {@link isRetriedConcurrentTransactions}. */
function withoutRetriedConcurrentTransactions(inner: DestinationStream): DestinationStream {
  return {
    write(line: string) {
      if (!isRetriedConcurrentTransactions(JSON.parse(line) as Record<string, unknown>)) inner.write(line);
    },
  };
}

/** A record to send in a transaction; `partition` defaults to 0. */
export interface TransactionalRecord {
  readonly key?: string | null;
  readonly value: string | Buffer | null;
  readonly headers?: Readonly<Record<string, string | Buffer>>;
  readonly partition?: number;
}

/** One transactional producer; at most one transaction open at a time (Kafka's rule per transactional id). */
export interface TransactionalProducer {
  readonly transactionalId: string;
  /** Begins a transaction. @throws Error when one is already open. */
  begin(): Promise<void>;
  /** Sends `records` to `topic` in the open transaction (one produce request, acks from all ISRs). */
  send(topic: string, records: readonly TransactionalRecord[]): Promise<void>;
  /** Commits the open transaction (writes COMMIT markers). */
  commit(): Promise<void>;
  /** Aborts the open transaction (writes ABORT markers; read_committed consumers must skip its records). */
  abort(): Promise<void>;
  /** Disconnects (an open transaction is left to the broker's `transaction.timeout.ms`). */
  disconnect(): Promise<void>;
}

/** Options of {@link transactionalProducer}. */
export interface TransactionalProducerOptions {
  /** Where the producer's KafkaJS log lines (JSON, level error and above) go; default stderr. */
  readonly logDestination?: DestinationStream;
}

/**
 * Connects a transactional producer with KafkaJS's settings for transactions: `idempotent: true`,
 * `maxInFlightRequests: 1` and a `transactionalId` (random unless given). Its log leaves out
 * KafkaJS's error lines for the CONCURRENT_TRANSACTIONS answers it retries
 * ({@link isRetriedConcurrentTransactions}), which a transaction begun right after the previous
 * one's commit or abort meets on a multi-broker cluster.
 */
export async function transactionalProducer(
  transactionalId = uniqueName("txn"),
  options: TransactionalProducerOptions = {},
): Promise<TransactionalProducer> {
  const log = createLogger(
    "error",
    {},
    withoutRetriedConcurrentTransactions(options.logDestination ?? pino.destination({ fd: 2, sync: true })),
  );
  const kafka = createKafka({ brokers: BROKERS, clientId: "replayable-test", log });
  const producer = kafka.producer({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 5000 },
  });
  await producer.connect();
  let open: Awaited<ReturnType<typeof producer.transaction>> | undefined;
  const current = () => {
    if (open === undefined) throw new Error(`transactional producer ${transactionalId}: no open transaction`);
    return open;
  };
  return {
    transactionalId,
    async begin() {
      if (open !== undefined)
        throw new Error(`transactional producer ${transactionalId}: a transaction is open`);
      open = await producer.transaction();
    },
    async send(topic, records) {
      await current().send({
        topic,
        acks: -1,
        messages: records.map((r) => ({
          key: r.key ?? null,
          value: r.value,
          headers: r.headers === undefined ? undefined : { ...r.headers },
          partition: r.partition ?? 0,
        })),
      });
    },
    async commit() {
      await current().commit();
      open = undefined;
    },
    async abort() {
      await current().abort();
      open = undefined;
    },
    async disconnect() {
      await producer.disconnect();
    },
  };
}
