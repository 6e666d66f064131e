/**
 * A transactional producer for tests: begin, send, commit or abort, as Kafka Streams, Flink or any
 * `transactional.id` producer writes (KIP-98). Each `send` is one produce request, so one record
 * batch in the log; a commit or an abort writes a control batch (the transaction marker).
 */
import { uniqueName, testKafka } from "./stack.js";

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

/**
 * Connects a transactional producer with KafkaJS's settings for transactions: `idempotent: true`,
 * `maxInFlightRequests: 1` and a `transactionalId` (random unless given).
 */
export async function transactionalProducer(
  transactionalId = uniqueName("txn"),
): Promise<TransactionalProducer> {
  const producer = testKafka().producer({
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
