/**
 * What a consumer group member tells its observers: typed events (graphile/worker's event map).
 * Metrics, the lag monitor, the event-id gauge, progress, DLQ forwarding and the
 * `onBatchCommitted` hook subscribe; the member's loop only emits. A listener that throws is
 * logged and ignored: an observer never stops the partition.
 */
import type { Logger } from "pino";
import type { RetryReason, PgFailureKind } from "../errors.js";
import type { CommitResult } from "../feed.js";
import type { Assignment, TopicPartition } from "../topicPartition.js";
import type { BatchResult } from "./applyBatch.js";
import type { MemoryPlan } from "./memoryPlan.js";

/** One transaction of a partition committed (or a batch the replay fast path skipped), then its offset commit ran. */
export interface TransactionCommitted extends TopicPartition {
  /** Offsets of the transaction's first and last record (its end of fetch for a batch of markers only). */
  readonly firstOffset: string;
  readonly lastOffset: string;
  /** Records in the transaction (or in the skipped batch). */
  readonly records: number;
  /** Bytes of the transaction's keys, values and headers; 0 on the fast path. */
  readonly bytes: number;
  /** The partition's high watermark when the batch was fetched. */
  readonly highWatermark: string;
  readonly result: BatchResult;
  /** True when the batch lay entirely below the cached checkpoint: no database round trip. */
  readonly fastPath: boolean;
  /** True when the skipped batch's records were not even decoded (FetchedBatch.undecoded): a replay below the checkpoint. */
  readonly undecoded: boolean;
  /** BEGIN to COMMIT of the attempt that committed, ms; undefined on the fast path. */
  readonly transactionMs: number | undefined;
  /** From the first attempt's start to the end of the offset commit, ms (retries in place included). */
  readonly durationMs: number;
  readonly offsetCommit: CommitResult;
}

/** A transaction failed and will be run again after `delayMs`. */
export interface TransactionRetried extends TopicPartition {
  readonly error: unknown;
  readonly kind: PgFailureKind;
  readonly reason: RetryReason;
  /** Consecutive failures of the partition so far (1-based). */
  readonly attempt: number;
  /** The first offset of the transaction that will be run again. */
  readonly fromOffset: string;
  readonly delayMs: number;
}

/** Every event of a member, by name, with its payload. */
export interface MemberEventMap {
  /** A group join: the generation and this member's whole assignment. */
  assigned: { readonly generation: number; readonly assignment: Assignment };
  /** The member holds no partitions any more (it stopped, or the client crashed; a restart rejoins). */
  revoked: { readonly generation: number };
  batchCommitted: TransactionCommitted;
  retried: TransactionRetried;
  /** The partition failed too often in a row: it waits `delayMs` before its next attempt. */
  paused: TopicPartition & { readonly delayMs: number };
  /** A paused partition's wait ended (or was cut short by a rebalance or stop). */
  resumed: TopicPartition;
  /** A failure no retry can fix: the member stops. */
  fatal: { readonly error: Error };
  /** A new memory plan applied (memoryBudget.ts): on every assignment, and when the records seen move it. */
  memoryPlanned: MemoryPlan & { readonly assignedPartitions: number };
}

/** A listener of event `K`. */
export type MemberListener<K extends keyof MemberEventMap> = (event: MemberEventMap[K]) => void;

/** The member's typed event emitter. */
export class MemberEvents {
  private readonly listeners: { [K in keyof MemberEventMap]?: MemberListener<K>[] } = {};

  /** @param log where a listener's exception is logged. */
  constructor(private readonly log: Logger) {}

  /** Calls `listener` on every `name` event, after the listeners added before it. */
  on<K extends keyof MemberEventMap>(name: K, listener: MemberListener<K>): this {
    const list = (this.listeners[name] ??= []) as MemberListener<K>[];
    list.push(listener);
    return this;
  }

  /** Calls the listeners of `name` in order; one that throws is logged and the others still run. */
  emit<K extends keyof MemberEventMap>(name: K, event: MemberEventMap[K]): void {
    const list = this.listeners[name];
    if (list === undefined) return;
    for (const listener of list) {
      try {
        listener(event);
      } catch (error) {
        this.log.warn({ err: error, event: name }, "a member event listener threw; ignored");
      }
    }
  }
}
