/**
 * A consumer group member over KafkaJS: `autoCommit` off, `eachBatch`, partitions in parallel,
 * each partition strictly in offset order. `eachBatch` only hands a fetched batch over to its
 * partition's lane and returns, so KafkaJS's fetch loop (which fetches again only once every
 * batch of a fetch is handled, and heartbeats meanwhile) never waits for a transaction, a lock or a
 * back-off: one slow or failing partition never stalls the others. A lane holds at most one batch
 * being applied plus, with `prefetch`, one fetched behind it; the partition is paused in KafkaJS
 * while its lane is full. Each batch belongs to the generation (group join) it was fetched in: it
 * is dropped if a rebalance comes first, and its offset commit is skipped after one. A broker
 * outage never ends the process: KafkaJS retries, then restarts the consumer, and where KafkaJS
 * gives up on an availability error this class restarts it with back-off.
 */
import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { backoffDelayMs } from "../engine/backoff.js";
import { ReplayableError, errorMessage } from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { KafkaRecord } from "../record.js";
import { assertKafkajsPatched } from "./kafkajsPatches.js";
import { toRecord } from "./toRecord.js";

/** Result of committing an offset after the database COMMIT (DESIGN.md step 8). */
export type CommitResult = "committed" | "skipped_rebalanced" | "failed";

/** What the handler of one partition's batch may do besides reading records. */
export interface BatchControl {
  /**
   * Aborted once the batch must not be worked on any more: the member is stopping, or the group
   * rebalanced (a new generation) since the batch was fetched. Pass it to back-off sleeps.
   */
  readonly signal: AbortSignal;
  /** False once {@link signal} is aborted: stop work, leave the rest of the batch unapplied. */
  isActive(): boolean;
  /**
   * Commits `nextOffset` for this partition, with the generation the batch was fetched in: after
   * a rebalance it is skipped (`skipped_rebalanced`), never committed for a partition this member
   * may no longer own. A commit that failed for another reason is retried in the background until
   * a later commit of the partition supersedes it or the group rebalances.
   */
  commit(nextOffset: string): Promise<CommitResult>;
}

/**
 * One partition's fetched records, in offset order. `size` is 0 for a fetch that held only
 * transaction markers (control records) or records of aborted transactions: the batch then only
 * moves the checkpoint and the committed offset to {@link PartitionBatch.throughOffset} + 1.
 */
export interface PartitionBatch {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: string;
  /**
   * Offsets of the first and last record and the number of records, known without converting
   * them; with `size` 0 both are `throughOffset`.
   */
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly size: number;
  /**
   * The last offset of the fetch (KafkaJS `batch.lastOffset()`): at or above `lastOffset`, as
   * transaction markers and aborted records that `read_committed` filtered out may follow the last
   * record. Applying the batch covers every offset up to it (Kafka's consumer likewise moves its
   * position past control records; KIP-98).
   */
  readonly throughOffset: string;
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
  /** KafkaJS `partitionsConsumedConcurrently`: how many fetched batches it hands over at once. */
  readonly partitionsConsumedConcurrently: number;
  /** Largest fetch per partition, bytes. */
  readonly maxBytesPerPartition: number;
  /**
   * Fetch a partition's next batch while the handler applies the one before (default false): at
   * most one batch per partition waits, fetched, behind the one being applied. Without it the
   * partition is not fetched while its batch is applied. Either way a partition's handler runs
   * one batch at a time, in offset order, and never holds up the fetching of other partitions.
   */
  readonly prefetch?: boolean;
  readonly log: Logger;
  /**
   * Applies one partition's batch. Runs outside KafkaJS's fetch loop, one batch of a partition at
   * a time, in offset order; returns when the batch is done or abandoned (`control.signal`). A
   * batch it leaves unapplied is fetched again after the next rebalance, from the committed offset.
   */
  readonly onBatch: (batch: PartitionBatch, control: BatchControl) => Promise<void>;
  /** Called on every group join with this member's assignment (topic → partitions). */
  readonly onAssignment?: (assignment: Readonly<Record<string, readonly number[]>>) => void;
  /** Called when the member holds no partitions any more: it stopped or crashed (a restart rejoins). */
  readonly onUnassigned?: () => void;
  /** Called on a crash that no restart can fix (authorization, a setting the broker refuses). */
  readonly onCrash?: (error: Error) => void;
  /** Back-off of restarts after a crash KafkaJS does not restart itself, ms; default 1000 to 30000. */
  readonly restartInitialMs?: number;
  readonly restartMaxMs?: number;
  /** Back-off of a failed offset commit's background retries, ms; default 1000 to 30000. */
  readonly commitRetryInitialMs?: number;
  readonly commitRetryMaxMs?: number;
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

/**
 * One assigned partition's lane: the handlers of its batches run one after another on `tail`;
 * `held` counts batches handed over and not finished (the one applied plus those waiting). The
 * partition is paused in KafkaJS while the lane is full, so a slow partition holds at most
 * {@link GroupConsumer.laneDepth} fetched batches and never blocks the fetch of the others.
 */
interface Lane {
  readonly topic: string;
  readonly partition: number;
  tail: Promise<void>;
  held: number;
  /** True while this lane asked KafkaJS to pause the partition. */
  paused: boolean;
}

/** A failed offset commit waiting for its background retry. */
interface PendingCommit {
  readonly offset: string;
  readonly generation: number;
  attempts: number;
}

/** A consumer group member. `start()` and `stop()` are idempotent. */
export class GroupConsumer {
  private readonly consumer: Consumer;
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private joined = false;
  /** Set by stop(): a crash from now on (e.g. the closed connection of a JoinGroup in flight) is the stop itself. */
  private stopRequested = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private restarts = 0;
  /**
   * Bumped on every group join: a batch belongs to the generation it was handed over in; it is
   * dropped if a join happened before it started, and it never commits in a later generation.
   */
  private generation = 0;
  /** Aborted on the next group join or on stop: the signal of every batch of the current generation. */
  private generationAbort = new AbortController();
  /** Per `topic/partition`: the lane of its batches. */
  private readonly lanes = new Map<string, Lane>();
  /** Per `topic/partition`: its offset commits in flight, chained in order (settles, never rejects). */
  private readonly commitChains = new Map<string, Promise<void>>();
  /** Per `topic/partition`: a failed offset commit to retry. */
  private readonly pendingCommits = new Map<string, PendingCommit>();
  private commitRetryTimer: NodeJS.Timeout | undefined;
  /**
   * Commits through the latest eachBatch payload of the current generation (works during a
   * graceful stop, unlike `consumer.commitOffsets`, which KafkaJS skips once stopping).
   */
  private committer: { generation: number; commit: EachBatchPayload["commitOffsetsIfNecessary"] } | undefined;

  constructor(private readonly options: GroupConsumerOptions) {
    this.consumer = options.kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: options.sessionTimeoutMs,
      rebalanceTimeout: Math.max(options.sessionTimeoutMs * 2, 60_000),
      heartbeatInterval: options.heartbeatIntervalMs,
      // How long the broker holds a fetch of caught-up partitions. KafkaJS sends offset commits on
      // the connection its fetches use, where a commit waits behind such a long poll (Java's consumer
      // talks to the coordinator on a connection of its own): 100 ms bounds that wait, at the cost
      // of up to 10 empty fetches a second per broker when idle (make bench, docs/benchmarks.md).
      maxWaitTimeInMs: 100,
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
    const { GROUP_JOIN, CRASH, STOP, END_BATCH_PROCESS } = this.consumer.events;
    this.consumer.on(GROUP_JOIN, (event) => {
      this.newGeneration();
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
    // KafkaJS does not call eachBatch for a fetch that held only transaction markers or aborted
    // records (it resolves the offset itself); this event reports it, so the checkpoint and the
    // committed offset move past them too (otherwise lag never reaches 0 on a transactional topic).
    this.consumer.on(END_BATCH_PROCESS, (event) => {
      const { topic, partition, batchSize, lastOffset, highWatermark } = event.payload;
      if (batchSize !== 0 || this.stopRequested) return;
      this.handOver(
        {
          topic,
          partition,
          highWatermark,
          firstOffset: lastOffset,
          lastOffset,
          throughOffset: lastOffset,
          size: 0,
          records: [],
        },
        this.generation,
      );
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

  /** Batches one partition may hold: the one applied, plus the prefetched one. */
  private get laneDepth(): number {
    return this.options.prefetch === true ? 2 : 1;
  }

  /**
   * A group join: batches handed over before it are dropped unless already running (those finish
   * their transaction, fenced by the checkpoint row lock, and skip their offset commit), failed
   * commits of the old generation are forgotten, and the partitions whose lane is still full are
   * paused again: a KafkaJS restart (a new consumer group object) forgets its paused partitions.
   */
  private newGeneration(): void {
    this.generation += 1;
    this.generationAbort.abort();
    this.generationAbort = new AbortController();
    this.pendingCommits.clear();
    for (const lane of this.lanes.values()) {
      if (lane.paused) this.setPaused(lane, true);
    }
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
   * Stops fetching, lets the batches being applied finish (each ends after its current
   * transaction and offset commit; batches waiting behind them are dropped), leaves the group
   * and disconnects.
   */
  stop(): Promise<void> {
    this.stopRequested = true;
    this.stopped ??= (async () => {
      clearTimeout(this.restartTimer);
      clearTimeout(this.commitRetryTimer);
      // The handlers run outside KafkaJS's eachBatch, which disconnect() would not wait for: stop
      // fetching (no busy re-fetch loop meanwhile), let them commit, then leave.
      try {
        this.consumer.pause(this.options.topics.map((topic) => ({ topic })));
      } catch {
        // Not running (never started, or crashed): nothing is fetched anyway.
      }
      this.generationAbort.abort();
      await Promise.allSettled([...this.lanes.values()].map((lane) => lane.tail));
      await Promise.allSettled([...this.commitChains.values()]);
      await this.consumer.disconnect();
    })();
    return this.stopped;
  }

  /**
   * Hands a fetched batch over to its partition's lane and returns at once: KafkaJS fetches
   * again only when every batch of a fetch is handled, so a handler that waited here (for a lock,
   * a back-off, the partition's previous batch) would stall every partition of that broker.
   */
  private eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (this.stopRequested || !payload.isRunning() || payload.isStale() || batch.messages.length === 0)
      return Promise.resolve();
    const { topic, partition, messages } = batch;
    const generation = this.generation;
    this.committer = { generation, commit: (offsets) => payload.commitOffsetsIfNecessary(offsets) };
    // The end of the fetch, transaction markers and aborted records included (KafkaJS maps the
    // last record's offset to it in resolveOffset, and so does this).
    const throughOffset = batch.lastOffset();
    // The fetch position moves past this batch now; the lane keeps it until it is applied.
    payload.resolveOffset(throughOffset);
    let records: KafkaRecord[] | undefined;
    this.handOver(
      {
        topic,
        partition,
        highWatermark: batch.highWatermark,
        firstOffset: messages[0]!.offset,
        lastOffset: messages[messages.length - 1]!.offset,
        throughOffset,
        size: messages.length,
        get records() {
          return (records ??= messages.map((m) => toRecord(topic, partition, m)));
        },
      },
      generation,
    );
    return Promise.resolve();
  }

  /** Queues `batch` on its lane; pauses the partition while the lane is full. */
  private handOver(batch: PartitionBatch, generation: number): void {
    const { topic, partition } = batch;
    const key = `${topic}/${partition}`;
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { topic, partition, tail: Promise.resolve(), held: 0, paused: false };
      this.lanes.set(key, lane);
    }
    const current = lane;
    current.held += 1;
    if (current.held >= this.laneDepth) this.setPaused(current, true);
    const signal = this.generationAbort.signal;
    const run = async () => {
      // Fetched before a rebalance (or a stop): the next owner re-reads it from the committed offset.
      if (generation !== this.generation || signal.aborted) return;
      await this.options.onBatch(batch, this.controlFor(batch, generation, signal));
    };
    current.tail = current.tail
      .then(run)
      .catch((error: unknown) =>
        this.options.log.error({ err: error, topic, partition }, "batch handler failed"),
      )
      .finally(() => {
        current.held -= 1;
        if (current.held < this.laneDepth && !this.stopRequested) this.setPaused(current, false);
      });
  }

  private setPaused(lane: Lane, paused: boolean): void {
    if (lane.paused === paused && !paused) return;
    lane.paused = paused;
    const partitions = [{ topic: lane.topic, partitions: [lane.partition] }];
    try {
      if (paused) this.consumer.pause(partitions);
      else this.consumer.resume(partitions);
    } catch {
      // Not running (between a crash and its restart): the next group join pauses it again.
    }
  }

  private controlFor(batch: PartitionBatch, generation: number, signal: AbortSignal): BatchControl {
    const { topic, partition } = batch;
    return {
      signal,
      isActive: () => !signal.aborted && generation === this.generation && !this.stopRequested,
      commit: (nextOffset) => this.commit(topic, partition, nextOffset, generation),
    };
  }

  /**
   * Commits `nextOffset` with the generation the batch was fetched in (DESIGN.md step 8). A
   * rebalance makes it `skipped_rebalanced`; another failure, after three quick attempts, leaves
   * it to the background retry ({@link retryPendingCommits}), so an idle partition does not keep
   * a stale committed offset.
   */
  private commit(
    topic: string,
    partition: number,
    nextOffset: string,
    generation: number,
  ): Promise<CommitResult> {
    return this.inCommitOrder(`${topic}/${partition}`, () =>
      this.commitWithRetries(topic, partition, nextOffset, generation),
    );
  }

  /**
   * Runs `send` after every offset commit of the partition asked for before it (a background retry
   * included), so an older offset never lands after a newer one, while the partition's lane goes
   * on with its next batch.
   */
  private inCommitOrder(key: string, send: () => Promise<CommitResult>): Promise<CommitResult> {
    const previous = this.commitChains.get(key) ?? Promise.resolve();
    const result = previous.then(send);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.commitChains.set(key, settled);
    void settled.then(() => {
      if (this.commitChains.get(key) === settled) this.commitChains.delete(key);
    });
    return result;
  }

  private async commitWithRetries(
    topic: string,
    partition: number,
    nextOffset: string,
    generation: number,
  ): Promise<CommitResult> {
    const key = `${topic}/${partition}`;
    for (let attempt = 1; ; attempt++) {
      const result = await this.commitOnce(topic, partition, nextOffset, generation);
      if (result !== "failed") {
        const pending = this.pendingCommits.get(key);
        if (pending !== undefined && (result === "committed" || pending.generation !== this.generation))
          this.pendingCommits.delete(key);
        return result;
      }
      if (attempt >= 3) {
        this.pendingCommits.set(key, { offset: nextOffset, generation, attempts: 0 });
        this.scheduleCommitRetry();
        return "failed";
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }

  private async commitOnce(
    topic: string,
    partition: number,
    nextOffset: string,
    generation: number,
  ): Promise<CommitResult> {
    // Not consumer.commitOffsets() where avoidable: KafkaJS skips that silently once stop() began,
    // which would lose the commit of the batch a graceful stop lets finish.
    const offsets = { topics: [{ topic, partitions: [{ partition, offset: nextOffset }] }] };
    try {
      await failpoint("offset-commit");
      // Checked right before the request is built, with no await in between.
      if (generation !== this.generation) return "skipped_rebalanced";
      const committer = this.committer;
      if (committer !== undefined && committer.generation === generation) await committer.commit(offsets);
      else await this.consumer.commitOffsets([{ topic, partition, offset: nextOffset }]);
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
      this.options.log.warn({ err: error, topic, partition, nextOffset }, "offset commit failed");
      return "failed";
    }
  }

  private scheduleCommitRetry(): void {
    if (this.commitRetryTimer !== undefined || this.stopRequested) return;
    const attempts = Math.max(0, ...[...this.pendingCommits.values()].map((p) => p.attempts));
    const delayMs = backoffDelayMs(
      attempts,
      this.options.commitRetryInitialMs ?? 1000,
      this.options.commitRetryMaxMs ?? 30_000,
    );
    this.commitRetryTimer = setTimeout(() => {
      this.commitRetryTimer = undefined;
      void this.retryPendingCommits();
    }, delayMs);
  }

  /** Retries the failed offset commits of the current generation; reschedules those that fail again. */
  private async retryPendingCommits(): Promise<void> {
    for (const [key, pending] of [...this.pendingCommits]) {
      if (this.stopRequested) return;
      if (pending.generation !== this.generation) {
        this.pendingCommits.delete(key);
        continue;
      }
      const [topic, partition] = splitKey(key);
      if (this.pendingCommits.get(key) !== pending) continue; // a later commit superseded it
      const result = await this.inCommitOrder(key, () =>
        // A commit queued before this retry may have superseded it meanwhile: then send nothing.
        this.pendingCommits.get(key) === pending
          ? this.commitOnce(topic, partition, pending.offset, pending.generation)
          : Promise.resolve<CommitResult>("skipped_rebalanced"),
      );
      if (this.pendingCommits.get(key) !== pending) continue;
      if (result === "failed") pending.attempts += 1;
      else {
        this.pendingCommits.delete(key);
        if (result === "committed")
          this.options.log.info(
            { topic, partition, nextOffset: pending.offset },
            "offset commit retried and committed",
          );
      }
    }
    if (this.pendingCommits.size > 0) this.scheduleCommitRetry();
  }
}

/** `topic/partition` back to its parts (a topic name never contains "/"). */
function splitKey(key: string): [string, number] {
  const at = key.lastIndexOf("/");
  return [key.slice(0, at), Number(key.slice(at + 1))];
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
