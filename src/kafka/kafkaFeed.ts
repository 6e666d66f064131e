/**
 * The {@link Feed} over KafkaJS: a consumer group member with `autoCommit` off and `eachBatch`,
 * whose `eachBatch` only stamps a fetched batch with its generation (group join), resolves its
 * offset and hands it to the engine, then returns. KafkaJS's fetch loop (which fetches again only
 * once every batch of a fetch is handled, and heartbeats meanwhile) so never waits for a
 * transaction, a lock or a back-off. A patch of KafkaJS (patches/, 003) drops a batch fetched
 * before a rejoin and wakes an idle fetcher on `resume`. A broker outage never ends the process:
 * KafkaJS retries, then restarts the consumer, and where KafkaJS gives up on an availability error
 * this class restarts it with back-off.
 */
import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { backoffDelayMs } from "../support/backoff.js";
import { ReplayableError, errorMessage } from "../errors.js";
import type { CommitResult, Feed, FeedListener, FetchedBatch } from "../feed.js";
import type { KafkaRecord } from "../record.js";
import { partitionKey, topicPartitionOf, type PartitionKey, type TopicPartition } from "../topicPartition.js";
import { assertTopicsExist } from "./admin.js";
import { assertKafkajsPatched } from "./kafkajsPatches.js";
import { OffsetCommits } from "./offsetCommits.js";
import { decodeRecordBatch, recordBatchBounds } from "./recordBatch.js";
import { toRecord } from "./toRecord.js";
import { stopStep } from "../support/stopStep.js";

/** The sizes of a fetch, bytes: per partition (Kafka's `max.partition.fetch.bytes`) and the whole response (`fetch.max.bytes`). */
export interface FetchLimits {
  readonly maxBytesPerPartition: number;
  readonly maxBytes: number;
  /**
   * The fetch size of a partition fetched below its decode floor (a replay: KafkaJS patch 009
   * does not decode those record batches), bytes; `maxBytesPerPartition` when absent.
   */
  readonly maxBytesPerPartitionBelowFloor?: number;
}

/** Options for {@link KafkaFeed}. */
export interface KafkaFeedOptions {
  readonly kafka: Kafka;
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Where `topics` came from, for the error naming one that does not exist (default: REPLAYABLE_TOPICS or --topic). */
  readonly topicsSource?: string;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /** KafkaJS `partitionsConsumedConcurrently`: how many fetched batches it hands over at once. */
  readonly partitionsConsumedConcurrently: number;
  /** The first fetch limits, bytes (KafkaJS `maxBytesPerPartition` and `maxBytes`); {@link KafkaFeed.setFetchLimits} changes them. */
  readonly fetchLimits: FetchLimits;
  readonly log: Logger;
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

/**
 * The consumer's metadata max age (KafkaJS `metadataMaxAge`, Java's `metadata.max.age.ms`), ms: the
 * longest a member fetches from a partition's old leader after a move it was not told of (the old
 * leader silent), plus one request timeout. KafkaJS's default is 300 s.
 */
export const METADATA_MAX_AGE_MS = 30_000;

/** A consumer group member's Kafka side over KafkaJS. `start()` and `stop()` are idempotent. */
export class KafkaFeed implements Feed {
  private readonly consumer: Consumer;
  private readonly commits: OffsetCommits;
  private listener: FeedListener | undefined;
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private joined = false;
  /** Set by stop(): a crash from now on (e.g. the closed connection of a JoinGroup in flight) is the stop itself. */
  private stopRequested = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private restarts = 0;
  /** Bumped on every group join; every fetched batch carries the generation it was fetched in. */
  private generation = 0;
  /** The partitions the engine paused, paused again after a join (a KafkaJS restart forgets them). */
  private readonly paused = new Set<PartitionKey>();
  /** The generation the engine asked to leave by a rejoin ({@link rejoin}), not yet begun. */
  private rejoinAsked: number | undefined;
  /** The consumer's stop and run of a rejoin, while it lasts. */
  private rejoining: Promise<void> | undefined;

  constructor(private readonly options: KafkaFeedOptions) {
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
      // How old the consumer's metadata (the leader of each partition) may get before a fetch
      // refreshes it. KafkaJS refreshes it on a leader change only when a broker answers
      // NOT_LEADER_OR_FOLLOWER or closes the connection; a request that times out on a silent
      // (half-open) connection does neither (Java's client disconnects and refreshes then). So a
      // member whose old leader went silent learns the new leaders only at this age: 30 s instead
      // of KafkaJS's 300 s bounds that stall (test/faults/brokerSilent.test.ts), for one Metadata
      // request per 30 s.
      metadataMaxAge: METADATA_MAX_AGE_MS,
      maxBytesPerPartition: options.fetchLimits.maxBytesPerPartition,
      maxBytes: options.fetchLimits.maxBytes,
      allowAutoTopicCreation: false,
      // Record batches below the engine's cached checkpoint (a replay) are handed over undecoded,
      // counted: KafkaJS patch 009 (patches/README.md).
      decodeFloor: (topic, partition) => this.listener?.decodeFloor?.({ topic, partition }),
      // The other record batches are handed over as bytes and decoded here, without KafkaJS's
      // message objects: KafkaJS patch 012, src/kafka/recordBatch.ts.
      recordBatchesAsBytes: true,
      retry: {
        retries: 10,
        initialRetryTime: 300,
        maxRetryTime: 30_000,
        // KafkaJS restarts a crashed consumer even after disconnect() when the crash was the
        // disconnect closing a request in flight (a SIGTERM while joining the group): never then.
        restartOnFailure: () => Promise.resolve(!this.stopRequested),
      },
    });
    // KafkaJS's consumer options have no fetch size below the decode floor (patch 009): set it here.
    if (options.fetchLimits.maxBytesPerPartitionBelowFloor !== undefined)
      this.setFetchLimits(options.fetchLimits);
    this.commits = new OffsetCommits({
      consumer: this.consumer,
      log: options.log,
      stopping: () => this.stopRequested,
      retryInitialMs: options.commitRetryInitialMs,
      retryMaxMs: options.commitRetryMaxMs,
    });
    this.listen();
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
  start(listener: FeedListener): Promise<void> {
    this.listener = listener;
    this.started ??= (async () => {
      await assertKafkajsPatched();
      await assertTopicsExist(
        this.options.kafka,
        this.options.topics,
        this.options.topicsSource ?? "REPLAYABLE_TOPICS or --topic",
      );
      await this.consumer.connect();
      await this.consumer.subscribe({ topics: [...this.options.topics], fromBeginning: true });
      await this.consumer.run(this.runConfig());
    })();
    return this.started;
  }

  /**
   * Stops fetching, awaits `drain` (the engine's transactions finish and ask for their commits),
   * waits for the commits in flight, leaves the group and disconnects.
   */
  stop(drain: () => Promise<void>): Promise<void> {
    this.stopRequested = true;
    this.stopped ??= (async () => {
      const { log } = this.options;
      clearTimeout(this.restartTimer);
      // A rejoin's run() under way would leave a consumer joining behind disconnect(): let it end.
      await stopStep(
        log,
        "the rejoin under way (its JoinGroup waits for the rebalance to end)",
        () => this.rejoining,
      );
      // The engine's transactions run outside KafkaJS's eachBatch, which disconnect() would not
      // wait for: stop fetching (no busy re-fetch loop meanwhile), let them commit, then leave.
      try {
        this.consumer.pause(this.options.topics.map((topic) => ({ topic })));
      } catch {
        // Not running (never started, or crashed): nothing is fetched anyway.
      }
      await stopStep(log, "the transactions in flight", drain);
      await stopStep(log, "the offset commits in flight", () => this.commits.stop());
      await stopStep(
        log,
        "KafkaJS's disconnect (a JoinGroup under way waits for the rebalance to end, then LeaveGroup)",
        () => this.consumer.disconnect(),
      );
    })();
    return this.stopped;
  }

  /** {@inheritDoc Feed.pause} */
  pause(tp: TopicPartition): void {
    this.paused.add(partitionKey(tp.topic, tp.partition));
    this.send("pause", tp);
  }

  /** {@inheritDoc Feed.resume} */
  resume(tp: TopicPartition): void {
    if (!this.paused.delete(partitionKey(tp.topic, tp.partition)) || this.stopRequested) return;
    this.send("resume", tp);
  }

  /**
   * Changes the fetch limits from the next fetch on, also for the consumer groups KafkaJS creates
   * when it restarts the consumer (KafkaJS patch 005, patches/README.md). The broker still returns
   * the first record batch of a fetch whole when it is larger (KIP-74).
   */
  setFetchLimits(limits: FetchLimits): void {
    this.consumer.setFetchLimits(limits);
  }

  /**
   * {@inheritDoc Feed.rejoin}
   * KafkaJS has no call that rejoins a running consumer's group, so the consumer is stopped (it
   * leaves the group: the group rebalances) and run again (it joins; a new offset manager fetches
   * every partition from its committed offset). Done at the consumer's next fetch: KafkaJS's
   * `stop()` does nothing to a consumer still joining its group, which would go on running.
   */
  rejoin(generation: number): void {
    if (this.stopRequested || !this.joined || generation !== this.generation) return;
    this.rejoinAsked = generation;
  }

  /** {@inheritDoc Feed.commit} */
  commit(tp: TopicPartition, nextOffset: string, generation: number): Promise<CommitResult> {
    return this.commits.commit(tp, nextOffset, generation);
  }

  private send(action: "pause" | "resume", tp: TopicPartition): void {
    try {
      this.consumer[action]([{ topic: tp.topic, partitions: [tp.partition] }]);
    } catch {
      // Not running (between a crash and its restart): the next group join pauses it again.
    }
  }

  /** Subscribes to the consumer's instrumentation events. */
  private listen(): void {
    const { GROUP_JOIN, CRASH, STOP, END_BATCH_PROCESS, FETCH_START } = this.consumer.events;
    this.consumer.on(GROUP_JOIN, (event) => this.onGroupJoin(event.payload));
    // KafkaJS emits it only while its runner runs (joined): a rejoin asked for starts here.
    this.consumer.on(FETCH_START, () => this.startRejoin());
    // KafkaJS does not call eachBatch for a fetch that held only transaction markers or aborted
    // records (it resolves the offset itself); this event reports it, so the checkpoint and the
    // committed offset move past them too (otherwise lag never reaches 0 on a transactional topic).
    this.consumer.on(END_BATCH_PROCESS, (event) => {
      const { topic, partition, batchSize, lastOffset, highWatermark } = event.payload;
      if (batchSize !== 0 || this.stopRequested) return;
      this.listener?.fetched(emptyBatch({ topic, partition, highWatermark }, this.generation, lastOffset));
    });
    // KafkaJS left the group (a stop, or a crash before its restart): that generation's commits are over.
    this.consumer.on(STOP, () => {
      this.commits.endGeneration();
      this.joined = false;
      this.listener?.unassigned();
    });
    this.consumer.on(CRASH, (event) => this.onCrash(event.payload.error, event.payload.restart));
  }

  /**
   * A group join: a new generation (commits of the old one are skipped, its failed commits
   * forgotten; its own are sent with this join's generation id and member id), the paused
   * partitions paused again, then the engine is told the assignment.
   */
  private onGroupJoin(payload: {
    memberId: string;
    generationId: number;
    memberAssignment: Record<string, number[]>;
  }): void {
    // A join KafkaJS completed while the feed stops (a rebalance under way when the stop began):
    // the engine has drained, so nothing takes the assignment; the disconnect leaves the group.
    if (this.stopRequested) {
      this.options.log.info(
        { memberId: payload.memberId, generationId: payload.generationId },
        "joined consumer group while stopping: the assignment is not taken",
      );
      return;
    }
    this.generation += 1;
    this.commits.newGeneration(this.generation, {
      generationId: payload.generationId,
      memberId: payload.memberId,
    });
    for (const key of this.paused) this.send("pause", topicPartitionOf(key));
    this.joined = true;
    this.restarts = 0;
    this.options.log.info(
      { memberId: payload.memberId, assignment: payload.memberAssignment },
      "joined consumer group",
    );
    this.listener?.assigned(this.generation, payload.memberAssignment);
  }

  /** Stops and runs the consumer again for the rejoin asked for, unless a join came since. */
  private startRejoin(): void {
    const generation = this.rejoinAsked;
    if (generation === undefined || this.rejoining !== undefined) return;
    this.rejoinAsked = undefined;
    if (generation !== this.generation || this.stopRequested) return;
    this.options.log.warn(
      { generation },
      "leaving and joining the consumer group again: the partitions are fetched again from their committed offsets",
    );
    this.rejoining = (async () => {
      try {
        await this.consumer.stop();
        if (!this.stopRequested) await this.consumer.run(this.runConfig());
      } catch (error) {
        if (!this.stopRequested) this.scheduleRestart(error as Error);
      } finally {
        this.rejoining = undefined;
      }
    })();
  }

  private onCrash(error: Error, restart: boolean): void {
    const log = this.options.log;
    this.commits.endGeneration();
    this.joined = false;
    this.listener?.unassigned();
    if (this.stopRequested) {
      log.info({ err: error }, "consumer request interrupted by the stop");
    } else if (restart) {
      log.warn({ err: error }, "consumer crashed; KafkaJS restarts it");
    } else if (isKafkaUnavailable(error)) {
      this.scheduleRestart(error);
    } else {
      log.error({ err: error }, "consumer crashed on an error a restart cannot fix");
      this.listener?.crashed(this.describeFatal(error));
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

  /**
   * Hands a fetched batch to the engine and returns at once: KafkaJS fetches again only when
   * every batch of a fetch is handled, so waiting here (for a lock, a back-off, the partition's
   * previous batch) would stall every partition of that broker.
   */
  private eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (this.stopRequested || !payload.isRunning() || payload.isStale() || batch.messages.length === 0)
      return Promise.resolve();
    const generation = this.generation;
    // The end of the fetch, transaction markers and aborted records included (KafkaJS maps the
    // last record's offset to it in resolveOffset, and so does this).
    const throughOffset = batch.lastOffset();
    // The fetch position moves past this batch now; the engine keeps it until it is applied.
    payload.resolveOffset(throughOffset);
    for (const fetched of fetchedBatches(batch, generation, throughOffset)) this.listener?.fetched(fetched);
    return Promise.resolve();
  }
}

type KafkaMessage = EachBatchPayload["batch"]["messages"][number];

/**
 * A KafkaJS batch as {@link FetchedBatch}es: one, unless it holds record batches KafkaJS passed
 * over undecoded below the engine's decode floor (patch 009). Those come first, as the floor is
 * below every decoded record above it; they and any decoded records before the last of them
 * become one undecoded batch (every offset of it is below the floor), and the messages after it
 * a batch of their own that ends at `throughOffset` (only that end when none is left and
 * transaction markers follow).
 */
export function fetchedBatches(
  batch: EachBatchPayload["batch"],
  generation: number,
  throughOffset: string,
): FetchedBatch[] {
  const { messages } = batch;
  if (!batch.undecoded) return [fetchedBatch(batch, messages, generation, throughOffset)];
  let last = messages.length - 1;
  while (messages[last]!.undecoded === undefined) last -= 1;
  const skipped = messages.slice(0, last + 1);
  const lastOffset = messages[last]!.offset;
  const undecoded: FetchedBatch = {
    topic: batch.topic,
    partition: batch.partition,
    generation,
    highWatermark: batch.highWatermark,
    firstOffset: messages[0]!.undecoded?.firstOffset ?? messages[0]!.offset,
    lastOffset,
    throughOffset: lastOffset,
    size: skipped.reduce((sum, m) => sum + (m.undecoded?.count ?? 1), 0),
    undecoded: true,
    get records(): never {
      throw new ReplayableError(
        "KAFKA",
        "the records of a batch handed over undecoded were read: only the replay fast path may take it",
      );
    },
  };
  const rest = messages.slice(last + 1);
  if (rest.length > 0) return [undecoded, fetchedBatch(batch, rest, generation, throughOffset)];
  if (throughOffset === lastOffset) return [undecoded];
  // Transaction markers or aborted records after the undecoded batches: only the end moves.
  return [undecoded, emptyBatch(batch, generation, throughOffset)];
}

/** A batch of no records that moves the checkpoint and the committed offset to `throughOffset`. */
function emptyBatch(
  batch: { topic: string; partition: number; highWatermark: string },
  generation: number,
  throughOffset: string,
): FetchedBatch {
  return {
    topic: batch.topic,
    partition: batch.partition,
    generation,
    highWatermark: batch.highWatermark,
    firstOffset: throughOffset,
    lastOffset: throughOffset,
    throughOffset,
    size: 0,
    records: [],
  };
}

/**
 * `messages` of a KafkaJS batch as a {@link FetchedBatch}; they are converted on first read. A
 * message that stands for a record batch handed over as bytes (patch 012) counts its records, and
 * is decoded into them (src/kafka/recordBatch.ts).
 */
function fetchedBatch(
  batch: EachBatchPayload["batch"],
  messages: readonly KafkaMessage[],
  generation: number,
  throughOffset: string,
): FetchedBatch {
  const { topic, partition } = batch;
  let records: KafkaRecord[] | undefined;
  // KafkaJS's messages are let go once converted: the records share their bytes and headers.
  let unconverted: readonly KafkaMessage[] | undefined = messages;
  const first = messages[0]!;
  const last = messages[messages.length - 1]!;
  // A byte batch's first and last record offsets: one walk over its records (recordBatchBounds),
  // not two when it is the only message.
  const bounds = (m: KafkaMessage) =>
    m.recordBatch === undefined ? undefined : recordBatchBounds(m.recordBatch);
  const firstBounds = bounds(first);
  const lastBounds = last === first ? firstBounds : bounds(last);
  const byteBatches = batch.asBytes ?? 0;
  let size = messages.length;
  if (byteBatches > 0)
    for (const m of messages) if (m.recordBatch !== undefined) size += m.recordBatch.count - 1;
  return {
    topic,
    partition,
    generation,
    highWatermark: batch.highWatermark,
    firstOffset: firstBounds?.firstOffset ?? first.offset,
    lastOffset: lastBounds?.lastOffset ?? last.offset,
    throughOffset,
    size,
    get records() {
      if (records === undefined) {
        records =
          byteBatches === 0
            ? unconverted!.map((m) => toRecord(topic, partition, m))
            : withBatchesDecoded(topic, partition, unconverted!, size);
        unconverted = undefined;
      }
      return records;
    },
  };
}

/** `messages` as records, those standing for record batches handed over as bytes decoded into theirs. */
function withBatchesDecoded(
  topic: string,
  partition: number,
  messages: readonly KafkaMessage[],
  size: number,
): KafkaRecord[] {
  const records = new Array<KafkaRecord>(size);
  let at = 0;
  for (const m of messages) {
    if (m.recordBatch === undefined) records[at++] = toRecord(topic, partition, m);
    else for (const record of decodeRecordBatch(topic, partition, m.recordBatch)) records[at++] = record;
  }
  return records;
}
