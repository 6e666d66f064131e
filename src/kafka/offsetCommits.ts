/**
 * Offset commits of a KafkaJS consumer group member (docs/design.md step 8), fenced by the generation a
 * batch was fetched in: after a rebalance a commit is skipped, never sent for a partition this
 * member may no longer own. A partition's commits leave one after another, in the order asked; one
 * that fails for another reason (three quick attempts) is retried in the background with back-off
 * until it lands, a later commit of the partition supersedes it, or the group rebalances, so an
 * idle partition does not keep a stale committed offset.
 */
import type { Consumer, EachBatchPayload } from "kafkajs";
import type { Logger } from "pino";
import { backoffDelayMs } from "../backoff.js";
import type { CommitResult } from "../feed.js";
import { failpoint } from "../failpoints.js";
import { partitionKey, topicPartitionOf, type PartitionKey, type TopicPartition } from "../topicPartition.js";

/** Coordinator answers that mean the group rebalanced: the commit is skipped, not failed. */
const REBALANCE_ERRORS = new Set(["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"]);

/** A failed offset commit waiting for its background retry. */
interface PendingCommit {
  readonly offset: string;
  readonly generation: number;
  attempts: number;
}

/** Options of {@link OffsetCommits}. */
export interface OffsetCommitsOptions {
  readonly consumer: Consumer;
  readonly log: Logger;
  /** The member's current generation (group joins so far). */
  readonly generation: () => number;
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
  /** Per partition: a failed commit to retry. */
  private readonly pending = new Map<PartitionKey, PendingCommit>();
  private retryTimer: NodeJS.Timeout | undefined;
  /**
   * Commits through the latest eachBatch payload of the current generation (works during a
   * graceful stop, unlike `consumer.commitOffsets`, which KafkaJS skips once stopping).
   */
  private committer: { generation: number; commit: EachBatchPayload["commitOffsetsIfNecessary"] } | undefined;

  constructor(private readonly options: OffsetCommitsOptions) {}

  /** The latest eachBatch payload's commit function, of `generation`. */
  useCommitter(generation: number, commit: EachBatchPayload["commitOffsetsIfNecessary"]): void {
    this.committer = { generation, commit };
  }

  /** A group join: failed commits of the old generation are forgotten. */
  newGeneration(): void {
    this.pending.clear();
  }

  /** Ends background retries and resolves once every commit in flight has settled. */
  async stop(): Promise<void> {
    clearTimeout(this.retryTimer);
    await Promise.allSettled([...this.chains.values()]);
  }

  /**
   * Commits `nextOffset` with the generation the batch was fetched in. A rebalance makes it
   * `skipped_rebalanced`; another failure, after three quick attempts, is left to the background
   * retry and answered `failed`.
   */
  commit(tp: TopicPartition, nextOffset: string, generation: number): Promise<CommitResult> {
    const key = partitionKey(tp.topic, tp.partition);
    return this.inOrder(key, () => this.commitWithRetries(key, nextOffset, generation));
  }

  /**
   * Runs `send` after every commit of the partition asked for before it (a background retry
   * included), so an older offset never lands after a newer one.
   */
  private inOrder(key: PartitionKey, send: () => Promise<CommitResult>): Promise<CommitResult> {
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
      if (result !== "failed") {
        const pending = this.pending.get(key);
        if (
          pending !== undefined &&
          (result === "committed" || pending.generation !== this.options.generation())
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

  private async commitOnce(key: PartitionKey, nextOffset: string, generation: number): Promise<CommitResult> {
    const { topic, partition } = topicPartitionOf(key);
    const log = this.options.log;
    // Not consumer.commitOffsets() where avoidable: KafkaJS skips that silently once stop() began,
    // which would lose the commit of the batch a graceful stop lets finish.
    const offsets = { topics: [{ topic, partitions: [{ partition, offset: nextOffset }] }] };
    try {
      await failpoint("offset-commit");
      // Checked right before the request is built, with no await in between.
      if (generation !== this.options.generation()) return "skipped_rebalanced";
      const committer = this.committer;
      if (committer !== undefined && committer.generation === generation) await committer.commit(offsets);
      else await this.options.consumer.commitOffsets([{ topic, partition, offset: nextOffset }]);
      return "committed";
    } catch (error) {
      const type = (error as { type?: string }).type;
      if (type !== undefined && REBALANCE_ERRORS.has(type)) {
        log.info({ topic, partition, nextOffset, type }, "offset commit skipped: the group rebalanced");
        return "skipped_rebalanced";
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
      if (pending.generation !== this.options.generation()) {
        this.pending.delete(key);
        continue;
      }
      if (this.pending.get(key) !== pending) continue; // a later commit superseded it
      const result = await this.inOrder(key, () =>
        // A commit queued before this retry may have superseded it meanwhile: then send nothing.
        this.pending.get(key) === pending
          ? this.commitOnce(key, pending.offset, pending.generation)
          : Promise.resolve<CommitResult>("skipped_rebalanced"),
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
