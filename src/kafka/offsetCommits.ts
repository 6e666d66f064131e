/**
 * Offset commits of a KafkaJS consumer group member (docs/design.md "The transaction", step 8), fenced by the generation a
 * batch was fetched in. Each OffsetCommit request carries the group generation id and member id of
 * the join that generation began with (KafkaJS patch 006, `consumer.commitOffsetsOfGeneration`), so
 * the group coordinator refuses it once the group has moved on; nothing looks the generation up
 * again, not even a retry. A commit of an ended generation is skipped without a request. A
 * partition's commits leave one after another, in the order asked; one that fails for a reason a
 * retry can help with (three quick attempts) is retried in the background with back-off until it
 * lands, a later commit of the partition supersedes it, or the generation ends, so an idle
 * partition does not keep a stale committed offset.
 */
import type { Consumer } from "kafkajs";
import type { Logger } from "pino";
import { backoffDelayMs } from "../support/backoff.js";
import type { CommitResult } from "../feed.js";
import { failpoint } from "../support/failpoints.js";
import { partitionKey, topicPartitionOf, type PartitionKey, type TopicPartition } from "../topicPartition.js";

/** Coordinator answers that mean the group rebalanced: the commit is skipped, not failed. */
const REBALANCE_ERRORS = new Set([
  "REBALANCE_IN_PROGRESS",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
  // The consumer rebalance protocol's (KIP-848; the platformatic feed's KAFKA_GROUP_PROTOCOL=consumer).
  "FENCED_MEMBER_EPOCH",
]);

/** KafkaJS's ids of one group join: what an OffsetCommit request of that generation carries. */
export interface GroupGeneration {
  /** The group generation id the coordinator gave the join (Kafka's `generation_id`). */
  readonly generationId: number;
  /** This member's id in the group at that join (Kafka's `member_id`). */
  readonly memberId: string;
}

/** One attempt's outcome; `failed_for_good` is a failure no retry can fix. */
type Attempt = CommitResult | "failed_for_good";

/** A failed offset commit waiting for its background retry. */
interface PendingCommit {
  readonly offset: string;
  readonly generation: number;
  attempts: number;
}

/** A commit waiting behind the partition's commit in flight, not sent yet; later ones join it. */
interface QueuedCommit {
  /** The offset to send (the latest asked) and the generation; read when the request is sent. */
  readonly entry: { offset: string; readonly generation: number };
  readonly result: Promise<CommitResult>;
}

/** Options of {@link OffsetCommits}. */
export interface OffsetCommitsOptions {
  /** Sends one OffsetCommit with the ids given (KafkaJS patch 006). */
  readonly consumer: Pick<Consumer, "commitOffsetsOfGeneration">;
  readonly log: Logger;
  /** True once the member stops: no background retry is scheduled any more. */
  readonly stopping: () => boolean;
  /** Back-off of a failed commit's background retries, ms; default 1000 to 30000. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
}

/** The member's offset commits, per partition in order. */
export class OffsetCommits {
  /** Per partition: its commits in flight, chained in order (settles, never rejects). */
  private readonly chains = new Map<PartitionKey, Promise<void>>();
  /** Per partition: the commit queued behind the one in flight, not sent yet. */
  private readonly queued = new Map<PartitionKey, QueuedCommit>();
  /** Per partition: a failed commit to retry. */
  private readonly pending = new Map<PartitionKey, PendingCommit>();
  private retryTimer: NodeJS.Timeout | undefined;
  /** The member's current generation (the feed's counter) and KafkaJS's ids of its join; none once it ended. */
  private current: ({ readonly generation: number } & GroupGeneration) | undefined;

  constructor(private readonly options: OffsetCommitsOptions) {}

  /**
   * A group join: from now on commits of `generation` (the feed's counter) are sent with `ids`, and
   * those of earlier generations are skipped; failed commits of the old generation are forgotten.
   */
  newGeneration(generation: number, ids: GroupGeneration): void {
    this.current = { generation, generationId: ids.generationId, memberId: ids.memberId };
    this.pending.clear();
  }

  /**
   * The current generation ended without a new join (KafkaJS stopped the consumer, or it crashed;
   * both leave the group): its commits are skipped without a request.
   */
  endGeneration(): void {
    this.current = undefined;
    this.pending.clear();
  }

  /** Ends background retries and resolves once every commit in flight has settled. */
  async stop(): Promise<void> {
    clearTimeout(this.retryTimer);
    await Promise.allSettled([...this.chains.values()]);
  }

  /**
   * Commits `nextOffset` with the generation the batch was fetched in: every attempt carries that
   * generation's ids. `committed` only when the coordinator accepted it. A generation that ended
   * (a later join, KafkaJS stopped) or the coordinator's ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or
   * REBALANCE_IN_PROGRESS make it `skipped_rebalanced`. A failure a retry can help with, after three
   * quick attempts, is left to the background retry and answered `failed`; one it cannot
   * (`retriable: false`: an ACL, the consumer not running) is `failed` at once.
   */
  commit(tp: TopicPartition, nextOffset: string, generation: number): Promise<CommitResult> {
    const key = partitionKey(tp.topic, tp.partition);
    if (!this.chains.has(key))
      return this.inOrder(key, () => this.commitWithRetries(key, nextOffset, generation));
    // A commit is in flight: this one waits. Commits asked meanwhile of the same generation are
    // sent as one request of the last offset, which covers them all (a replay's fast path asks for
    // one per fetched batch, faster than the coordinator answers); each caller gets its result.
    const waiting = this.queued.get(key);
    if (waiting !== undefined && waiting.entry.generation === generation) {
      if (BigInt(nextOffset) > BigInt(waiting.entry.offset)) waiting.entry.offset = nextOffset;
      return waiting.result;
    }
    const entry: { offset: string; readonly generation: number } = { offset: nextOffset, generation };
    const result = this.inOrder(key, () => {
      if (this.queued.get(key)?.entry === entry) this.queued.delete(key);
      return this.commitWithRetries(key, entry.offset, generation);
    });
    this.queued.set(key, { entry, result });
    return result;
  }

  /**
   * Runs `send` after every commit of the partition asked for before it (a background retry
   * included), so an older offset never lands after a newer one.
   */
  private inOrder<T>(key: PartitionKey, send: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(key) ?? Promise.resolve();
    const result = previous.then(send);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(key, settled);
    void settled.then(() => {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    });
    return result;
  }

  private async commitWithRetries(
    key: PartitionKey,
    nextOffset: string,
    generation: number,
  ): Promise<CommitResult> {
    for (let attempt = 1; ; attempt++) {
      const result = await this.commitOnce(key, nextOffset, generation);
      if (result === "failed_for_good") return "failed";
      if (result !== "failed") {
        const pending = this.pending.get(key);
        if (
          pending !== undefined &&
          (result === "committed" || pending.generation !== this.current?.generation)
        )
          this.pending.delete(key);
        return result;
      }
      if (attempt >= 3) {
        this.pending.set(key, { offset: nextOffset, generation, attempts: 0 });
        this.scheduleRetry();
        return "failed";
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }

  /**
   * One OffsetCommit request of `generation`, with the ids of its join. `failed_for_good` is a
   * failure no retry can fix (KafkaJS marks it `retriable: false`: an ACL, a refused argument, the
   * consumer not running).
   */
  private async commitOnce(key: PartitionKey, nextOffset: string, generation: number): Promise<Attempt> {
    const { topic, partition } = topicPartitionOf(key);
    const log = this.options.log;
    try {
      await failpoint("offset-commit");
      // The ids of the batch's own generation, or none once it ended: never a later generation's.
      const joined = this.current;
      if (joined?.generation !== generation) return "skipped_rebalanced";
      await this.options.consumer.commitOffsetsOfGeneration({
        generationId: joined.generationId,
        memberId: joined.memberId,
        topics: [{ topic, partitions: [{ partition, offset: nextOffset }] }],
      });
      return "committed";
    } catch (error) {
      const { type, retriable } = error as { type?: string; retriable?: boolean };
      if (type !== undefined && REBALANCE_ERRORS.has(type)) {
        log.info({ topic, partition, nextOffset, type }, "offset commit skipped: the group rebalanced");
        return "skipped_rebalanced";
      }
      if (retriable === false) {
        log.error({ err: error, topic, partition, nextOffset }, "offset commit failed; a retry cannot help");
        return "failed_for_good";
      }
      log.warn({ err: error, topic, partition, nextOffset }, "offset commit failed");
      return "failed";
    }
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.options.stopping()) return;
    const attempts = Math.max(0, ...[...this.pending.values()].map((p) => p.attempts));
    const delayMs = backoffDelayMs(
      attempts,
      this.options.retryInitialMs ?? 1000,
      this.options.retryMaxMs ?? 30_000,
    );
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.retryPending();
    }, delayMs);
  }

  /** Retries the failed commits of the current generation; reschedules those that fail again. */
  private async retryPending(): Promise<void> {
    for (const [key, pending] of [...this.pending]) {
      if (this.options.stopping()) return;
      if (pending.generation !== this.current?.generation) {
        this.pending.delete(key);
        continue;
      }
      if (this.pending.get(key) !== pending) continue; // a later commit superseded it
      const result = await this.inOrder(key, () =>
        // A commit queued before this retry may have superseded it meanwhile: then send nothing.
        this.pending.get(key) === pending
          ? this.commitOnce(key, pending.offset, pending.generation)
          : Promise.resolve<Attempt>("skipped_rebalanced"),
      );
      if (this.pending.get(key) !== pending) continue;
      if (result === "failed") pending.attempts += 1;
      else {
        this.pending.delete(key);
        if (result === "committed")
          this.options.log.info(
            { ...topicPartitionOf(key), nextOffset: pending.offset },
            "offset commit retried and committed",
          );
      }
    }
    if (this.pending.size > 0) this.scheduleRetry();
  }
}
