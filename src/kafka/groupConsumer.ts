/**
 * A consumer group member over KafkaJS: `autoCommit` off, `eachBatch`, partitions in parallel,
 * each partition strictly in offset order. It hands each partition's batch to a handler and
 * gives it a commit function that refuses to commit for a partition this member no longer owns.
 */
import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import type { Logger } from "pino";
import type { KafkaRecord } from "../record.js";
import { toRecord } from "./toRecord.js";

/** Result of committing an offset after the database COMMIT (DESIGN.md step 8). */
export type CommitResult = "committed" | "skipped_rebalanced" | "failed";

/** What the handler of one partition's batch may do besides reading records. */
export interface BatchControl {
  /** False once the member is stopping or the partition was revoked (a rebalance): stop work. */
  isActive(): boolean;
  /** Sends a heartbeat if one is due; keeps the member in the group during long batches. */
  heartbeat(): Promise<void>;
  /** Commits `nextOffset` for this partition unless the assignment changed meanwhile. */
  commit(nextOffset: string): Promise<CommitResult>;
  /** Marks offsets up to `offset` as processed locally, so the next fetch continues after it. */
  resolve(offset: string): void;
}

/** One partition's fetched records, in offset order. */
export interface PartitionBatch {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: string;
  readonly records: readonly KafkaRecord[];
}

/** Options for {@link GroupConsumer}. */
export interface GroupConsumerOptions {
  readonly kafka: Kafka;
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly partitionsConsumedConcurrently: number;
  /** Largest fetch per partition, bytes. */
  readonly maxBytesPerPartition: number;
  readonly log: Logger;
  readonly onBatch: (batch: PartitionBatch, control: BatchControl) => Promise<void>;
  /** Called on every group join with this member's assignment (topic → partitions). */
  readonly onAssignment?: (assignment: Readonly<Record<string, readonly number[]>>) => void;
  /** Called when the member holds no partitions any more: it stopped or crashed (a restart rejoins). */
  readonly onUnassigned?: () => void;
  /** Called when KafkaJS gives up (the consumer crashed and will not restart). */
  readonly onCrash?: (error: Error) => void;
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

  constructor(private readonly options: GroupConsumerOptions) {
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
      this.joined = true;
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
      options.log.error({ err: event.payload.error, restart: event.payload.restart }, "consumer crashed");
      if (!event.payload.restart) options.onCrash?.(event.payload.error);
    });
  }

  /** True between the first group join and stop or crash. */
  get isJoined(): boolean {
    return this.joined;
  }

  /** Connects, subscribes (a new group starts from the earliest offset) and starts fetching. */
  start(): Promise<void> {
    this.started ??= (async () => {
      await this.consumer.connect();
      await this.consumer.subscribe({ topics: [...this.options.topics], fromBeginning: true });
      await this.consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: this.options.partitionsConsumedConcurrently,
        eachBatch: (payload) => this.eachBatch(payload),
      });
    })();
    return this.started;
  }

  /** Stops fetching, waits for in-flight batches to finish, leaves the group and disconnects. */
  stop(): Promise<void> {
    this.stopRequested = true;
    this.stopped ??= this.consumer.disconnect();
    return this.stopped;
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (batch.messages.length === 0) return;
    const { topic, partition } = batch;
    const control: BatchControl = {
      isActive: () => payload.isRunning() && !payload.isStale(),
      heartbeat: async () => {
        await payload.heartbeat();
      },
      resolve: (offset) => payload.resolveOffset(offset),
      commit: async (nextOffset) => {
        // Not consumer.commitOffsets(): KafkaJS skips that silently once stop() began, which would
        // lose the commit of the batch a graceful stop lets finish. This commits with the current
        // generation, so the coordinator refuses it after a rebalance.
        const offsets = { topics: [{ topic, partitions: [{ partition, offset: nextOffset }] }] };
        for (let attempt = 1; ; attempt++) {
          if (payload.isStale()) return "skipped_rebalanced";
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
    await this.options.onBatch(
      {
        topic,
        partition,
        highWatermark: batch.highWatermark,
        records: batch.messages.map((m) => toRecord(topic, partition, m)),
      },
      control,
    );
  }
}
