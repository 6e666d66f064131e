/**
 * DLQ forwarding: after a transaction that dead-lettered records committed (and its offset commit
 * ran), publishes those dead letters to REPLAYABLE_DLQ_TOPIC and records `published_at`. The
 * database row stays the source of truth: a failed publish is logged and counted, never retried
 * here (`replayable dead-letters` still lists the letter).
 */
import type pg from "pg";
import type { Logger } from "pino";
import type { DeadLetterToPublish } from "../kafka/deadLetterPublisher.js";
import type { Metrics } from "../metrics/metrics.js";
import { markDeadLettersPublished } from "../sql/markDeadLettersPublished.js";
import type { MemberEvents, TransactionCommitted } from "./memberEvents.js";

/** Where dead letters are published: one DLQ topic. */
export interface DeadLetterSink {
  readonly topic: string;
  publish(letters: readonly DeadLetterToPublish[]): Promise<void>;
}

/** Options of {@link DeadLetterForwarder}. */
export interface DeadLetterForwarderOptions {
  readonly sink: DeadLetterSink;
  readonly projection: string;
  readonly pool: pg.Pool;
  readonly metrics: Metrics;
  readonly log: Logger;
}

/** Forwards each committed transaction's dead letters to the DLQ topic. */
export class DeadLetterForwarder {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: DeadLetterForwarderOptions) {}

  /** Follows the member's committed transactions. */
  observe(events: MemberEvents): void {
    events.on("batchCommitted", (event) => {
      if (event.result.deadLettered.length === 0) return;
      const forwarding = this.forward(event).finally(() => this.inFlight.delete(forwarding));
      this.inFlight.add(forwarding);
    });
  }

  /** Resolves once every publish in flight has settled. */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private async forward(event: TransactionCommitted): Promise<void> {
    const { sink, metrics, projection } = this.options;
    const log = this.options.log.child({ topic: event.topic, partition: event.partition });
    const letters = event.result.deadLettered.map((d) => ({ ...d, projection }));
    try {
      await sink.publish(letters);
    } catch (error) {
      metrics.dlqPublishes.inc({ result: "failed" }, letters.length);
      log.warn(
        { err: error, deadLetterIds: letters.map((l) => l.id), dlqTopic: sink.topic },
        "publishing dead letters to the DLQ topic failed; they stay in replayable.dead_letters",
      );
      return;
    }
    metrics.dlqPublishes.inc({ result: "published" }, letters.length);
    await markDeadLettersPublished(
      this.options.pool,
      letters.map((l) => l.id),
    ).catch((error: unknown) => log.warn({ err: error }, "recording published_at of dead letters failed"));
  }
}
