/**
 * A consumer group member over KafkaJS: `autoCommit` off, `eachBatch`, partitions in parallel,
 * each partition strictly in offset order. It hands each partition's batch to a handler and
 * gives it a commit function that refuses to commit for a partition this member no longer owns,
 * and a pause function for a partition whose transactions keep failing. With `prefetch`, the
 * handler of a batch runs while KafkaJS fetches the partition's next one. A broker outage never
 * ends the process: KafkaJS retries, then restarts the consumer, and where KafkaJS gives up on an
 * availability error this class restarts it with back-off.
 */
import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import { backoffDelayMs } from "../engine/backoff.js";
import { ReplayableError, errorMessage } from "../errors.js";
import { nextOffset } from "../offsets.js";
import type { KafkaRecord } from "../record.js";
import { assertKafkajsPatched } from "./kafkajsPatches.js";
import { toRecord } from "./toRecord.js";

/** Result of committing an offset after the database COMMIT (DESIGN.md step 8). */
export type CommitResult = "committed" | "skipped_rebalanced" | "failed";

/** What the handler of one partition's batch may do besides reading records. */
export interface BatchControl {
  /** False once the member is stopping, the group rebalanced or the partition was revoked: stop work. */
  isActive(): boolean;
  /** Sends a heartbeat if one is due; keeps the member in the group during long batches. */
  heartbeat(): Promise<void>;
  /** Commits `nextOffset` for this partition unless the group rebalanced since the batch was fetched. */
  commit(nextOffset: string): Promise<CommitResult>;
  /**
   * Marks offsets up to `offset` as applied. When the handler returns, the partition is fetched
   * again from the first offset of the batch it did not resolve (none: the batch was done).
   */
  resolve(offset: string): void;
  /**
   * Stops fetching this partition for `ms`, then resumes it (KafkaJS `pause`/`resume`). The
   * handler returns without resolving the rest of the batch, so fetching starts again at the
   * first unresolved offset. The member keeps heartbeating and other partitions keep going meanwhile.
   */
  pause(ms: number): void;
}

/** One partition's fetched records, in offset order (never empty). */
export interface PartitionBatch {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: string;
  /** Offsets of the first and last record and the number of records, known without converting them. */
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly size: number;
  /** The records, converted from KafkaJS messages on first read (the replay fast path never reads them). */
  readonly records: readonly KafkaRecord[];
}

/** Options for {@link GroupConsumer}. */
export interface GroupConsumerOptions {
  readonly kafka: Kafka;
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /**
   * Partitions whose batches are handled at once (KafkaJS `partitionsConsumedConcurrently`); with
   * `prefetch`, also the most handlers (transactions) running at once.
   */
  readonly partitionsConsumedConcurrently: number;
  /** Largest fetch per partition, bytes. */
  readonly maxBytesPerPartition: number;
  /**
   * Fetch a partition's next batch while the handler applies the one before (default false):
   * the handler of a partition still runs one batch at a time, in offset order, but KafkaJS's
   * fetch (and its decoding, on the same thread) overlaps the database work. At most one batch
   * per partition waits, fetched, behind the one being applied.
   */
  readonly prefetch?: boolean;
  readonly log: Logger;
  readonly onBatch: (batch: PartitionBatch, control: BatchControl) => Promise<void>;
  /** Called on every group join with this member's assignment (topic → partitions). */
  readonly onAssignment?: (assignment: Readonly<Record<string, readonly number[]>>) => void;
  /** Called when the member holds no partitions any more: it stopped or crashed (a restart rejoins). */
  readonly onUnassigned?: () => void;
  /** Called on a crash that no restart can fix (authorization, a setting the broker refuses). */
  readonly onCrash?: (error: Error) => void;
  /** Called when the number of paused partitions changes. */
  readonly onPausedChange?: (paused: number) => void;
  /** Back-off of restarts after a crash KafkaJS does not restart itself, ms; default 1000 to 30000. */
  readonly restartInitialMs?: number;
  readonly restartMaxMs?: number;
}

/**
 * KafkaJS errors that mean "the cluster is not reachable or not ready yet": a restart later can
 * succeed. KafkaJS marks some of them non-retriable (KafkaJSGroupCoordinatorNotFound,
 * KafkaJSLockTimeout) and then does not restart the consumer itself.
 */
const UNAVAILABLE_ERRORS = new Set([
  "KafkaJSConnectionError",
  "KafkaJSConnectionClosedError",
  "KafkaJSRequestTimeoutError",
  "KafkaJSNoBrokerAvailableError",
  "KafkaJSBrokerNotFound",
  "KafkaJSGroupCoordinatorNotFound",
  "KafkaJSLockTimeout",
  "KafkaJSTimeout",
  "KafkaJSMetadataNotLoaded",
  "KafkaJSTopicMetadataNotLoaded",
  "KafkaJSStaleTopicMetadataAssignment",
  "KafkaJSNumberOfRetriesExceeded",
]);

/** True when `error` (or a cause) says the cluster is unavailable for now, not that we are wrong. */
export function isKafkaUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; typeof e === "object" && e !== null && depth < 10; depth++) {
    const { name, retriable, cause } = e as { name?: unknown; retriable?: unknown; cause?: unknown };
    if ((typeof name === "string" && UNAVAILABLE_ERRORS.has(name)) || retriable === true) return true;
    e = cause;
  }
  return false;
}

const REBALANCE_ERRORS = new Set([
  "REBALANCE_IN_PROGRESS",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
  "NOT_COORDINATOR_FOR_GROUP",
]);

/** A consumer group member. `start()` and `stop()` are idempotent. */
export class GroupConsumer {
  private readonly consumer: Consumer;
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private joined = false;
  /** Set by stop(): a crash from now on (e.g. the closed connection of a JoinGroup in flight) is the stop itself. */
  private stopRequested = false;
  private readonly resumeTimers = new Map<string, NodeJS.Timeout>();
  private restartTimer: NodeJS.Timeout | undefined;
  private restarts = 0;
  /** Bumped on every group join: a batch fetched before it neither commits nor moves the fetch position. */
  private generation = 0;
  /** Prefetch: per `topic/partition`, the handler run of its batch being applied. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Prefetch: at most partitionsConsumedConcurrently handlers run at once. */
  private readonly slots: LimitFunction;

  constructor(private readonly options: GroupConsumerOptions) {
    this.slots = pLimit(options.partitionsConsumedConcurrently);
    this.consumer = options.kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: options.sessionTimeoutMs,
      rebalanceTimeout: Math.max(options.sessionTimeoutMs * 2, 60_000),
      heartbeatInterval: options.heartbeatIntervalMs,
      maxBytesPerPartition: options.maxBytesPerPartition,
      allowAutoTopicCreation: false,
      retry: {
        retries: 10,
        initialRetryTime: 300,
        maxRetryTime: 30_000,
        // KafkaJS restarts a crashed consumer even after disconnect() when the crash was the
        // disconnect closing a request in flight (a SIGTERM while joining the group): never then.
        restartOnFailure: () => Promise.resolve(!this.stopRequested),
      },
    });
    const { GROUP_JOIN, CRASH, STOP } = this.consumer.events;
    this.consumer.on(GROUP_JOIN, (event) => {
      this.generation += 1;
      this.joined = true;
      this.restarts = 0;
      options.log.info(
        {
          memberId: event.payload.memberId,
          assignment: event.payload.memberAssignment,
        },
        "joined consumer group",
      );
      options.onAssignment?.(event.payload.memberAssignment);
    });
    this.consumer.on(STOP, () => {
      this.joined = false;
      options.onUnassigned?.();
    });
    this.consumer.on(CRASH, (event) => {
      this.joined = false;
      options.onUnassigned?.();
      if (this.stopRequested) {
        options.log.info({ err: event.payload.error }, "consumer request interrupted by the stop");
        return;
      }
      const { error, restart } = event.payload;
      if (restart) {
        options.log.warn({ err: error }, "consumer crashed; KafkaJS restarts it");
      } else if (isKafkaUnavailable(error)) {
        this.scheduleRestart(error);
      } else {
        options.log.error({ err: error }, "consumer crashed on an error a restart cannot fix");
        options.onCrash?.(this.describeFatal(error));
      }
    });
  }

  /** Restarts the consumer after a crash KafkaJS does not restart itself, with back-off. */
  private scheduleRestart(error: Error): void {
    const delayMs = backoffDelayMs(
      this.restarts++,
      this.options.restartInitialMs ?? 1000,
      this.options.restartMaxMs ?? 30_000,
    );
    this.options.log.warn(
      { err: error, restartInMs: delayMs, restarts: this.restarts },
      "Kafka unavailable; restarting the consumer",
    );
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.stopRequested) return;
      void (async () => {
        try {
          await this.consumer.connect();
          await this.consumer.run(this.runConfig());
        } catch (restartError) {
          // connect() failed (no broker yet): no CRASH event follows, so schedule the next try here.
          if (!this.stopRequested) this.scheduleRestart(restartError as Error);
        }
      })();
    }, delayMs);
  }

  /** A crash error with the setting to change, where one is to blame. */
  private describeFatal(error: Error): Error {
    const type = (error as { type?: unknown }).type;
    if (type === "INVALID_SESSION_TIMEOUT") {
      return new ReplayableError(
        "CONFIG_INVALID",
        `REPLAYABLE_SESSION_TIMEOUT_MS=${this.options.sessionTimeoutMs}: the broker refuses it; it must lie within the broker's group.min.session.timeout.ms and group.max.session.timeout.ms (6000 and 1800000 by default)`,
        { cause: error },
      );
    }
    return new ReplayableError("KAFKA", `the Kafka consumer stopped: ${errorMessage(error)}`, {
      cause: error,
    });
  }

  private runConfig(): Parameters<Consumer["run"]>[0] {
    return {
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.options.partitionsConsumedConcurrently,
      eachBatch: (payload) => this.eachBatch(payload),
    };
  }

  /** True between the first group join and stop or crash. */
  get isJoined(): boolean {
    return this.joined;
  }

  /**
   * Checks the topics exist, connects, subscribes (a new group starts from the earliest offset)
   * and starts fetching.
   * @throws ReplayableError CONFIG_INVALID naming a topic that does not exist.
   * @throws ReplayableError KAFKA when the loaded KafkaJS lacks the patches in patches/.
   * @throws the KafkaJS connection error when no broker answers (after KafkaJS's retries).
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      await assertKafkajsPatched();
      await assertTopicsExist(this.options.kafka, this.options.topics, "REPLAYABLE_TOPICS or --topic");
      await this.consumer.connect();
      await this.consumer.subscribe({ topics: [...this.options.topics], fromBeginning: true });
      await this.consumer.run(this.runConfig());
    })();
    return this.started;
  }

  /**
   * Stops fetching, waits for in-flight batches to finish (each ends after its current
   * transaction and offset commit), leaves the group and disconnects.
   */
  stop(): Promise<void> {
    this.stopRequested = true;
    this.stopped ??= (async () => {
      clearTimeout(this.restartTimer);
      for (const timer of this.resumeTimers.values()) clearTimeout(timer);
      this.resumeTimers.clear();
      if (this.inFlight.size > 0) {
        // Prefetch: the handlers run outside KafkaJS's eachBatch, which disconnect() would not wait
        // for; stop fetching (no busy re-fetch loop meanwhile), let them commit, then leave.
        try {
          this.consumer.pause(this.options.topics.map((topic) => ({ topic })));
        } catch {
          // Not running (never started, or crashed): nothing is fetched anyway.
        }
        await Promise.allSettled([...this.inFlight.values()]);
      }
      await this.consumer.disconnect();
    })();
    return this.stopped;
  }

  /** Number of partitions paused by {@link BatchControl.pause} and not resumed yet. */
  get pausedPartitions(): number {
    return this.resumeTimers.size;
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (batch.messages.length === 0) return;
    const { topic, partition } = batch;
    const key = `${topic}/${partition}`;
    const prefetch = this.options.prefetch === true;
    if (prefetch) {
      // One batch of a partition at a time, in offset order: this one was fetched while the one
      // before was applied; wait for it. If it did not finish, it moved the fetch position back
      // (a pending seek makes this batch stale) or paused the partition: drop this batch.
      const previous = this.inFlight.get(key);
      if (previous !== undefined) await previous;
    }
    if (this.stopRequested || !payload.isRunning() || payload.isStale() || this.resumeTimers.has(key)) return;
    const generation = this.generation;
    /** The last offset of this batch the handler resolved (applied, or skipped as below the checkpoint). */
    let resolved: string | undefined;
    const control: BatchControl = {
      isActive: () =>
        !this.stopRequested && generation === this.generation && payload.isRunning() && !payload.isStale(),
      heartbeat: async () => {
        await payload.heartbeat();
      },
      resolve: (offset) => {
        resolved = offset;
        if (!prefetch) payload.resolveOffset(offset);
      },
      pause: (ms) => {
        // During a stop nothing is fetched any more (stop() paused every topic); pausing one
        // partition would make KafkaJS fetch the topic's other partitions again.
        if (this.stopRequested) return;
        const resume = payload.pause();
        clearTimeout(this.resumeTimers.get(key));
        this.resumeTimers.set(
          key,
          setTimeout(() => {
            this.resumeTimers.delete(key);
            this.options.onPausedChange?.(this.resumeTimers.size);
            this.options.log.info({ topic, partition }, "partition resumed");
            resume();
          }, ms),
        );
        this.options.onPausedChange?.(this.resumeTimers.size);
      },
      commit: async (nextOffset) => {
        // Not consumer.commitOffsets(): KafkaJS skips that silently once stop() began, which would
        // lose the commit of the batch a graceful stop lets finish. This commits with the current
        // generation, so the coordinator refuses it after a rebalance.
        const offsets = { topics: [{ topic, partitions: [{ partition, offset: nextOffset }] }] };
        for (let attempt = 1; ; attempt++) {
          if (generation !== this.generation || payload.isStale()) return "skipped_rebalanced";
          try {
            await payload.commitOffsetsIfNecessary(offsets);
            return "committed";
          } catch (error) {
            const type = (error as { type?: string }).type;
            if (type !== undefined && REBALANCE_ERRORS.has(type) && type !== "NOT_COORDINATOR_FOR_GROUP") {
              this.options.log.info(
                { topic, partition, nextOffset, type },
                "offset commit skipped: the group rebalanced",
              );
              return "skipped_rebalanced";
            }
            if (attempt >= 3) {
              this.options.log.warn({ err: error, topic, partition, nextOffset }, "offset commit failed");
              return "failed";
            }
            await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
          }
        }
      },
    };
    const { messages } = batch;
    let records: KafkaRecord[] | undefined;
    const lastOffset = messages[messages.length - 1]!.offset;
    const handle = () =>
      this.options.onBatch(
        {
          topic,
          partition,
          highWatermark: batch.highWatermark,
          firstOffset: messages[0]!.offset,
          lastOffset,
          size: messages.length,
          get records() {
            return (records ??= messages.map((m) => toRecord(topic, partition, m)));
          },
        },
        control,
      );
    if (!prefetch) {
      await handle();
      return;
    }
    // Prefetch: KafkaJS fetches from after this batch while the handler applies it, once one of
    // the partitionsConsumedConcurrently slots is free (eachBatch no longer bounds the handlers).
    payload.resolveOffset(lastOffset);
    const done = this.slots(handle)
      .catch((error: unknown) =>
        this.options.log.error({ err: error, topic, partition }, "batch handler failed"),
      )
      .then(() => {
        if (resolved !== lastOffset)
          this.refetchFrom(
            topic,
            partition,
            generation,
            resolved === undefined ? messages[0]!.offset : nextOffset(resolved),
          );
      });
    const tracked = done.finally(() => {
      if (this.inFlight.get(key) === tracked) this.inFlight.delete(key);
    });
    this.inFlight.set(key, tracked);
  }

  /**
   * Prefetch: the handler left part of its batch unapplied (paused, stopped, failed), but the
   * fetch position is already past the batch. Seek back to the first unapplied offset, so it is
   * fetched again, as KafkaJS does for an unresolved batch; a batch fetched meanwhile is stale.
   * Not after a rebalance or during a stop: the next fetch then starts from the committed offset.
   */
  private refetchFrom(topic: string, partition: number, generation: number, offset: string): void {
    if (generation !== this.generation || this.stopRequested) return;
    try {
      this.consumer.seek({ topic, partition, offset });
    } catch (error) {
      this.options.log.warn(
        { err: error, topic, partition, offset },
        "could not seek back to an unapplied batch",
      );
    }
  }
}

/**
 * Checks that every topic exists, so a misspelt name fails at start with its name instead of
 * KafkaJS's "This server does not host this topic-partition".
 * @param source where the names came from, for the message (e.g. "REPLAYABLE_TOPICS or --topic").
 * @throws ReplayableError CONFIG_INVALID naming the missing topics.
 */
export async function assertTopicsExist(
  kafka: Kafka,
  topics: readonly string[],
  source: string,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        `topic${missing.length > 1 ? "s" : ""} ${missing.join(", ")} (${source}) ${missing.length > 1 ? "do" : "does"} not exist on the cluster; create ${missing.length > 1 ? "them" : "it"} first or correct the name`,
        { context: { missing } },
      );
    }
  } finally {
    await admin.disconnect();
  }
}
