/**
 * The {@link Feed} over @platformatic/kafka (KAFKA_CLIENT=platformatic; issue 30, phase 1: the
 * classic group protocol). It uses the library's group membership (JoinGroup, SyncGroup,
 * heartbeats and their rejoins; each join is a `consumer:group:join` event with the generation id)
 * and owns what the library's stream lacks for docs/design.md "A feed adapter's guarantees":
 *
 * - its own fetch loop ({@link PlatformaticFeed}'s `pump`), one Fetch request in flight per broker,
 *   with the partitions that are neither paused nor in a fetch already, so a partition is paused
 *   on its own (the library's `MessagesStream` pauses all or nothing);
 * - its own read_committed filter ({@link committedBatches}), as the library's keeps aborted
 *   records (abortedTransactions.ts);
 * - offset commits with the ids of the batch's own generation (generationCommits.ts), never the
 *   library's `commit`, which rejoins and sends again in the next generation;
 * - OFFSET_OUT_OF_RANGE starts the partition again from its log start offset, as KafkaJS does with
 *   `fromBeginning` (docs/design.md), with a warning naming the offsets: never silently, never at
 *   the latest offset.
 *
 * Admin calls (the topics check at start) stay on KafkaJS in this phase.
 */
import type { Consumer, RecordsBatch } from "@platformatic/kafka";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { ReplayableError, errorMessage } from "../../errors.js";
import type { CommitResult, Feed, FeedListener, FetchedBatch } from "../../feed.js";
import type { KafkaRecord } from "../../record.js";
import { backoffDelayMs } from "../../support/backoff.js";
import { partitionKey, type PartitionKey, type TopicPartition } from "../../topicPartition.js";
import { assertTopicsExist } from "../admin.js";
import type { FetchLimits } from "../kafkaFeed.js";
import { OffsetCommits } from "../offsetCommits.js";
import { committedBatches } from "./abortedTransactions.js";
import { ConsumerGroupMember, type TopicAssignment } from "./consumerGroupMember.js";
import { committedOffsetsWithoutMember, generationCommitter } from "./generationCommits.js";
import { assertPlatformaticPatched, loadPlatformaticKafka, type PlatformaticKafka } from "./loadClient.js";
import type { PlatformaticSecurity } from "./platformaticSecurity.js";
import { offsetOf, toRecord, type RawRecord } from "./toRecord.js";
import { stopStep } from "../../support/stopStep.js";

/** Options for {@link PlatformaticFeed}. */
export interface PlatformaticFeedOptions {
  /** The KafkaJS client of the admin calls (the topics check), which stay on KafkaJS in this phase. */
  readonly kafka: Kafka;
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** TLS and SASL of the consumer's connections (KAFKA_SECURITY_PROTOCOL and friends; platformaticSecurity.ts). */
  readonly security?: PlatformaticSecurity;
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Where `topics` came from, for the error naming one that does not exist. */
  readonly topicsSource?: string;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /**
   * The group protocol (KAFKA_GROUP_PROTOCOL): `classic` (JoinGroup/SyncGroup, the library's
   * membership) or `consumer` (KIP-848: the broker assigns; {@link ConsumerGroupMember}). Default classic.
   */
  readonly groupProtocol?: "classic" | "consumer";
  /** The first fetch limits, bytes; {@link PlatformaticFeed.setFetchLimits} changes them. */
  readonly fetchLimits: FetchLimits;
  readonly log: Logger;
  /** Back-off of a failed fetch or group join, ms; default 1000 to 30000. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  /** Back-off of a failed offset commit's background retries, ms; default 1000 to 30000. */
  readonly commitRetryInitialMs?: number;
  readonly commitRetryMaxMs?: number;
  /** Loads the library (tests pass a Node.js version through it); default {@link loadPlatformaticKafka}. */
  readonly load?: () => Promise<PlatformaticKafka>;
}

/**
 * How long the broker holds a fetch of caught-up partitions, ms. Fetches share the consumer's
 * connection with its heartbeats and offset commits, which wait behind such a long poll: 100 ms
 * bounds that wait, as for KafkaJS (src/kafka/kafkaFeed.ts).
 */
const FETCH_MAX_WAIT_MS = 100;

/** A Fetch response as the library decodes it. */
type FetchResponse = Awaited<ReturnType<Consumer["fetch"]>>;

/** The protocol error code of OFFSET_OUT_OF_RANGE (Kafka's `Errors`). */
const OFFSET_OUT_OF_RANGE_CODE = 1;

/** Protocol errors a fetch may answer that no retry can fix: the member stops. */
const FATAL_FETCH_ERRORS = [
  "TOPIC_AUTHORIZATION_FAILED",
  "CLUSTER_AUTHORIZATION_FAILED",
  "UNSUPPORTED_VERSION",
];

/** Fetch errors after which the topic's metadata (its id, its leaders) is read again. */
const STALE_TOPIC_ERRORS = [
  "UNKNOWN_TOPIC_OR_PARTITION",
  "UNKNOWN_TOPIC_ID",
  "INCONSISTENT_TOPIC_ID",
  "FETCH_SESSION_TOPIC_ID_ERROR",
];

/** Protocol errors of a group join that no retry can fix. */
const FATAL_GROUP_ERRORS = [
  "GROUP_AUTHORIZATION_FAILED",
  "INVALID_SESSION_TIMEOUT",
  "INCONSISTENT_GROUP_PROTOCOL",
];

/** One assigned partition in one generation: where it is fetched from next. */
interface PartitionState extends TopicPartition {
  readonly key: PartitionKey;
  /** The next offset to fetch; undefined until the committed offset is known. */
  position: bigint | undefined;
  /** True while a fetch that holds it is in flight. */
  fetching: boolean;
  /** Failed fetches in a row, for the back-off. */
  failures: number;
  /** No fetch before this time (ms since the epoch): the back-off after a failed fetch. */
  notBefore: number;
}

/** One generation (group join): its partitions and whether it still fetches. */
interface Generation {
  readonly generation: number;
  readonly partitions: Map<PartitionKey, PartitionState>;
  /** False once a later join began, a rebalance was announced, or the feed stops. */
  active: boolean;
  /** Each topic's id when this generation first fetched it: a new id is a recreated topic. */
  readonly topicIds: Map<string, string>;
}

/** A consumer group member's Kafka side over @platformatic/kafka. `start()` and `stop()` are idempotent. */
export class PlatformaticFeed implements Feed {
  private lib: PlatformaticKafka | undefined;
  private consumer: Consumer | undefined;
  private commits: OffsetCommits | undefined;
  private listener: FeedListener | undefined;
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private stopRequested = false;
  private joined = false;
  /** Bumped on every group join; every fetched batch carries the generation it was fetched in. */
  private generation = 0;
  private current: Generation | undefined;
  /** The partitions the engine paused; a pause outlives a rejoin. */
  private readonly paused = new Set<PartitionKey>();
  private limits: FetchLimits;
  /**
   * Brokers (node ids) with a fetch in flight, of any generation: one at a time per broker, as the
   * library keeps one incremental fetch session per broker (KIP-227) and a second request in
   * flight would reuse its epoch.
   */
  private readonly busyNodes = new Set<number>();
  private pumpTimer: NodeJS.Timeout | undefined;
  private joinTimer: NodeJS.Timeout | undefined;
  private joinFailures = 0;
  private joining: Promise<void> | undefined;
  /** The KIP-848 membership (KAFKA_GROUP_PROTOCOL=consumer); undefined with the classic protocol. */
  private member: ConsumerGroupMember | undefined;
  /** The last join's payload: a KIP-848 rejoin starts a new generation of the same assignment. */
  private lastJoin: { memberId: string; generationId?: number; assignments?: TopicAssignment } | undefined;

  constructor(private readonly options: PlatformaticFeedOptions) {
    this.limits = options.fetchLimits;
  }

  /** True between a group join and stop or a lost membership. */
  get isJoined(): boolean {
    return this.joined;
  }

  /**
   * Loads the library, checks the topics exist (KafkaJS admin), joins the group (a new group
   * starts from the earliest offset) and starts fetching.
   * @throws ReplayableError CONFIG_INVALID when this Node.js cannot run @platformatic/kafka, or
   *   naming a topic that does not exist.
   * @throws ReplayableError KAFKA when the loaded library lacks replayable's patch
   *   (assertPlatformaticPatched), or when the first group join fails for a reason no retry can fix.
   */
  start(listener: FeedListener): Promise<void> {
    this.listener = listener;
    this.started ??= (async () => {
      const lib = await (this.options.load ?? loadPlatformaticKafka)();
      assertPlatformaticPatched(lib);
      await assertTopicsExist(
        this.options.kafka,
        this.options.topics,
        this.options.topicsSource ?? "REPLAYABLE_TOPICS or --topic",
      );
      if (this.stopRequested) return;
      this.lib = lib;
      const { options } = this;
      const consumer = this.createConsumer(lib);
      this.consumer = consumer;
      this.commits = new OffsetCommits({
        consumer: generationCommitter(lib, consumer),
        log: options.log,
        stopping: () => this.stopRequested,
        retryInitialMs: options.commitRetryInitialMs,
        retryMaxMs: options.commitRetryMaxMs,
      });
      // The library's joinGroup and fetch read the subscribed topics from here (its stream does this).
      consumer.topics.trackAll(...options.topics);
      consumer.on("consumer:group:join", (payload) => this.onGroupJoin(payload));
      // A heartbeat answered REBALANCE_IN_PROGRESS: the library rejoins; this generation fetches no more.
      consumer.on("consumer:group:rebalance", () => {
        // As KafkaJS logs "The group is rebalancing, re-joining": a stop now waits for the rejoin.
        options.log.info("the group is rebalancing: the library rejoins it");
        this.endFetching();
      });
      // The library's rejoin after a heartbeat failed (it emits 'error'; unhandled, it would throw).
      consumer.on("error", (error: Error) => this.onMembershipLost(error));
      if (options.groupProtocol === "consumer") {
        options.log.info(
          { kafkaClient: "platformatic", groupProtocol: "consumer" },
          "the feed runs on @platformatic/kafka",
        );
        this.member = this.consumerGroupMember(lib, consumer);
        this.member.start();
        return;
      }
      options.log.info({ kafkaClient: "platformatic" }, "the feed runs on @platformatic/kafka");
      await this.join(true);
    })();
    return this.started;
  }

  /**
   * The library's consumer with the member's settings (timeouts, read_committed, the budget's
   * fetch size); autocommit off (offsets are committed after the transaction, docs/design.md).
   */
  private createConsumer(lib: PlatformaticKafka): Consumer {
    const { options } = this;
    return new lib.Consumer({
      clientId: options.clientId,
      bootstrapBrokers: [...options.brokers],
      ...options.security,
      groupId: options.groupId,
      sessionTimeout: options.sessionTimeoutMs,
      rebalanceTimeout: Math.max(options.sessionTimeoutMs * 2, 60_000),
      heartbeatInterval: options.heartbeatIntervalMs,
      // Per request, on every connection (KafkaJS's requestTimeout; the library's default). A
      // JoinGroup gets no longer (the Java client gives it the rebalance timeout + 5 s): one that
      // waits longer for the other members times out, and the library joins again. (The option
      // `timeout` is the time limit the library's admin and producer send to the broker; no
      // request of the consumer carries one.)
      requestTimeout: 30_000,
      retries: 3,
      retryDelay: 300,
      metadataMaxAge: 30_000,
      autocommit: false,
      isolationLevel: lib.FetchIsolationLevels.READ_COMMITTED,
      maxWaitTime: FETCH_MAX_WAIT_MS,
      minBytes: 1,
      maxBytes: this.limits.maxBytes,
    });
  }

  /** {@inheritDoc Feed.stop} */
  stop(drain: () => Promise<void>): Promise<void> {
    this.stopRequested = true;
    this.stopped ??= (async () => {
      const { log } = this.options;
      clearTimeout(this.joinTimer);
      clearTimeout(this.pumpTimer);
      await stopStep(log, "the start under way", () => this.started?.catch(() => undefined));
      await stopStep(log, "the JoinGroup under way (it waits for the rebalance to end)", () =>
        this.joining?.catch(() => undefined),
      );
      this.endFetching();
      await stopStep(log, "the transactions in flight", drain);
      await stopStep(log, "the offset commits in flight", () => this.commits?.stop());
      this.commits?.endGeneration();
      await stopStep(log, "the leave heartbeat (KIP-848)", () => this.member?.leave());
      if (this.joined) {
        this.joined = false;
        this.listener?.unassigned();
      }
      const consumer = this.consumer;
      if (consumer !== undefined)
        await stopStep(
          log,
          "LeaveGroup and the client's close (behind a JoinGroup the library sent on the coordinator's connection, when the group is rebalancing)",
          () => this.closeConsumer(consumer),
        );
    })();
    return this.stopped;
  }

  /**
   * Leaves the group (classic protocol: LeaveGroup) and closes the connections. The library's
   * `close` sends its LeaveGroup to the coordinator it cached, once; when that fails (NOT_COORDINATOR
   * after the coordinator moved) it keeps every connection open, and the process would not exit
   * until the shutdown timeout. Then the member leaves through `leaveGroup`, which looks the
   * coordinator up again and retries, and the client is closed again. Failures are logged.
   */
  private async closeConsumer(consumer: Consumer): Promise<void> {
    const { log } = this.options;
    try {
      await consumer.close();
      return;
    } catch (error) {
      log.warn(
        { err: error },
        "leaving the consumer group failed; leaving again after a new coordinator lookup",
      );
    }
    // The types list the callback overload first; without one the library returns a promise.
    await (consumer.leaveGroup(true) as unknown as Promise<void>).catch((error: unknown) => {
      log.warn({ err: error }, "leaving the consumer group failed");
    });
    await consumer.close(true).catch((error: unknown) => {
      log.warn({ err: error }, "closing the Kafka client failed");
    });
  }

  /** {@inheritDoc Feed.pause} */
  pause(tp: TopicPartition): void {
    this.paused.add(partitionKey(tp.topic, tp.partition));
  }

  /** {@inheritDoc Feed.resume} */
  resume(tp: TopicPartition): void {
    if (!this.paused.delete(partitionKey(tp.topic, tp.partition)) || this.stopRequested) return;
    this.schedulePump(0);
  }

  /**
   * Changes the fetch limits from the next fetch on. The broker still returns the first record
   * batch of a fetch whole when it is larger (KIP-74).
   */
  setFetchLimits(limits: FetchLimits): void {
    this.limits = limits;
  }

  /** {@inheritDoc Feed.commit} */
  commit(tp: TopicPartition, nextOffset: string, generation: number): Promise<CommitResult> {
    if (this.commits === undefined) return Promise.resolve("skipped_rebalanced");
    return this.commits.commit(tp, nextOffset, generation);
  }

  /**
   * {@inheritDoc Feed.rejoin}
   * Sends JoinGroup again with this member's id: the coordinator starts a rebalance, every member
   * rejoins, and this one gets a new generation whose partitions are fetched from their committed
   * offsets.
   */
  rejoin(generation: number): void {
    if (this.stopRequested || !this.joined || generation !== this.generation || this.joining) return;
    if (this.member !== undefined) {
      // KIP-848: nothing to tell the broker; a new generation of the same assignment fetches every
      // partition again from its committed offset, and the old one's commits are skipped.
      this.options.log.warn(
        { generation },
        "starting a new generation: the partitions are fetched again from their committed offsets",
      );
      if (this.lastJoin !== undefined) this.onGroupJoin(this.lastJoin);
      return;
    }
    this.options.log.warn(
      { generation },
      "joining the consumer group again: the partitions are fetched again from their committed offsets",
    );
    this.endFetching();
    void this.join(false);
  }

  /**
   * Joins the group; the library emits `consumer:group:join` (see {@link onGroupJoin}) before it
   * resolves. A failure a retry can help with is retried with back-off; `first` makes any other
   * failure reject (start), otherwise the engine is told (`crashed`).
   */
  private join(first: boolean): Promise<void> {
    const consumer = this.consumer!;
    const attempt = (async () => {
      try {
        await consumer.joinGroup({});
        this.joinFailures = 0;
      } catch (error) {
        if (this.stopRequested) return;
        if (this.isFatal(error, FATAL_GROUP_ERRORS)) {
          const fatal = new ReplayableError(
            "KAFKA",
            `joining the consumer group failed: ${errorMessage(error)}`,
            {
              cause: error,
            },
          );
          if (first) throw fatal;
          this.listener?.crashed(fatal);
          return;
        }
        this.scheduleJoin(error);
      } finally {
        this.joining = undefined;
      }
    })();
    this.joining = attempt;
    return attempt;
  }

  private scheduleJoin(error: unknown): void {
    const delayMs = backoffDelayMs(
      this.joinFailures++,
      this.options.retryInitialMs ?? 1000,
      this.options.retryMaxMs ?? 30_000,
    );
    this.options.log.warn({ err: error, retryInMs: delayMs }, "joining the consumer group failed; retrying");
    clearTimeout(this.joinTimer);
    this.joinTimer = setTimeout(() => {
      if (!this.stopRequested) void this.join(false);
    }, delayMs);
  }

  /** The library's rejoin after a failed heartbeat gave up: the generation is over; join again. */
  private onMembershipLost(error: Error): void {
    if (this.stopRequested) return;
    this.endFetching();
    this.commits?.endGeneration();
    if (this.joined) {
      this.joined = false;
      this.listener?.unassigned();
    }
    if (this.isFatal(error, FATAL_GROUP_ERRORS)) {
      this.listener?.crashed(
        new ReplayableError("KAFKA", `the consumer group membership failed: ${errorMessage(error)}`, {
          cause: error,
        }),
      );
      return;
    }
    if (this.joining === undefined) this.scheduleJoin(error);
  }

  /**
   * A group join: a new generation (commits of the old one are skipped; its own are sent with this
   * join's ids), the engine is told the assignment, then the partitions' committed offsets are
   * read and fetching starts.
   */
  private onGroupJoin(payload: {
    memberId: string;
    generationId?: number;
    assignments?: { topic: string; partitions: number[] }[];
  }): void {
    if (this.stopRequested) return;
    this.lastJoin = payload;
    this.endFetching();
    this.generation += 1;
    const generation = this.generation;
    this.commits!.newGeneration(generation, {
      generationId: payload.generationId ?? -1,
      memberId: payload.memberId,
    });
    const assignment: Record<string, number[]> = {};
    const partitions = new Map<PartitionKey, PartitionState>();
    for (const { topic, partitions: numbers } of payload.assignments ?? []) {
      assignment[topic] = [...numbers].sort((a, b) => a - b);
      for (const partition of numbers) {
        const key = partitionKey(topic, partition);
        partitions.set(key, {
          key,
          topic,
          partition,
          position: undefined,
          fetching: false,
          failures: 0,
          notBefore: 0,
        });
      }
    }
    const state: Generation = { generation, partitions, active: true, topicIds: new Map() };
    this.current = state;
    this.joined = true;
    this.options.log.info(
      { memberId: payload.memberId, generationId: payload.generationId, assignment },
      "joined consumer group",
    );
    this.listener?.assigned(generation, assignment);
    void this.readPositions(state);
  }

  /** The KIP-848 member, wired to this feed's generations. */
  private consumerGroupMember(lib: PlatformaticKafka, consumer: Consumer): ConsumerGroupMember {
    return new ConsumerGroupMember({
      lib,
      consumer,
      groupId: this.options.groupId,
      topics: this.options.topics,
      rebalanceTimeoutMs: Math.max(this.options.sessionTimeoutMs * 2, 60_000),
      log: this.options.log,
      events: {
        assigned: (memberEpoch, memberId, assignments) =>
          this.onGroupJoin({ memberId, generationId: memberEpoch, assignments }),
        // Same assignment, same generation: its commits go with the new epoch from now on.
        epochChanged: (memberEpoch, memberId) =>
          this.commits?.newGeneration(this.generation, { generationId: memberEpoch, memberId }),
        lost: () => {
          this.endFetching();
          this.commits?.endGeneration();
          if (this.joined) {
            this.joined = false;
            this.listener?.unassigned();
          }
        },
        failed: (error) =>
          this.listener?.crashed(
            new ReplayableError("KAFKA", `the consumer group membership failed: ${errorMessage(error)}`, {
              cause: error,
            }),
          ),
      },
    });
  }

  /**
   * The group's committed offsets of `topics`, by the library's OffsetFetch; refused with
   * ILLEGAL_GENERATION (a classic member in a consumer group: a switch to KIP-848 under way, and the
   * library sends the member's id), read again without a member id, which the broker does not check.
   */
  private async committedOffsets(topics: { topic: string; partitions: number[] }[]) {
    const consumer = this.consumer!;
    const lib = this.lib!;
    return consumer.listCommittedOffsets({ topics }).catch((error: unknown) => {
      if (lib.findErrorBy(error as Error, "apiId", "ILLEGAL_GENERATION") === null) throw error;
      return committedOffsetsWithoutMember(lib, consumer, topics);
    });
  }

  /** Stops the current generation's fetching: batches of fetches in flight are dropped. */
  private endFetching(): void {
    if (this.current !== undefined) this.current.active = false;
  }

  /**
   * Sets each partition's position to its committed offset; a partition without one (a new group)
   * starts at its log start offset. Retried with back-off while the generation lasts.
   */
  private async readPositions(state: Generation): Promise<void> {
    const consumer = this.consumer!;
    const lib = this.lib!;
    const byTopic = new Map<string, number[]>();
    for (const p of state.partitions.values())
      byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
    if (byTopic.size === 0) return;
    for (let attempt = 0; state.active && !this.stopRequested; attempt++) {
      try {
        const committed = await this.committedOffsets(
          [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
        );
        const missing = new Map<string, number[]>();
        for (const p of state.partitions.values()) {
          const offset = committed.get(p.topic)?.[p.partition];
          if (offset !== undefined && offset >= 0n) p.position = offset;
          else missing.set(p.topic, [...(missing.get(p.topic) ?? []), p.partition]);
        }
        if (missing.size > 0) {
          const earliest = await consumer.listOffsets({
            topics: [...missing.keys()],
            partitions: Object.fromEntries(missing),
            timestamp: lib.ListOffsetTimestamps.EARLIEST,
          });
          for (const [topic, partitions] of missing)
            for (const partition of partitions) {
              const offset = earliest.get(topic)?.[partition];
              if (offset === undefined || offset < 0n)
                throw new Error(`no log start offset for ${topic}:${partition}`);
              state.partitions.get(partitionKey(topic, partition))!.position = offset;
            }
        }
        if (state.active) this.schedulePump(0);
        return;
      } catch (error) {
        if (!state.active || this.stopRequested) return;
        if (this.isFatal(error, FATAL_GROUP_ERRORS)) {
          this.listener?.crashed(
            new ReplayableError("KAFKA", `reading the committed offsets failed: ${errorMessage(error)}`, {
              cause: error,
            }),
          );
          return;
        }
        const delayMs = backoffDelayMs(
          attempt,
          this.options.retryInitialMs ?? 1000,
          this.options.retryMaxMs ?? 30_000,
        );
        this.options.log.warn(
          { err: error, retryInMs: delayMs },
          "reading the committed offsets failed; retrying",
        );
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private schedulePump(delayMs: number): void {
    if (this.stopRequested) return;
    if (this.pumpTimer !== undefined) {
      if (delayMs > 0) return; // one is due already; it schedules the next
      clearTimeout(this.pumpTimer);
    }
    this.pumpTimer = setTimeout(() => {
      this.pumpTimer = undefined;
      void this.pump();
    }, delayMs);
  }

  /**
   * Sends a fetch to every broker that has none in flight, with its assigned partitions that are
   * neither paused, in a fetch, nor backing off. Runs again when a fetch answers, a partition is
   * resumed, or a back-off ends.
   */
  private async pump(): Promise<void> {
    const state = this.current;
    const consumer = this.consumer;
    if (state === undefined || consumer === undefined || !state.active || this.stopRequested) return;
    let metadata: Awaited<ReturnType<Consumer["metadata"]>>;
    try {
      metadata = await consumer.metadata({ topics: [...this.options.topics] });
    } catch (error) {
      this.options.log.warn({ err: error }, "reading the cluster metadata failed; retrying");
      this.schedulePump(this.options.retryInitialMs ?? 1000);
      return;
    }
    if (!state.active || this.stopRequested) return;
    // A topic deleted and created again under the same name: its offsets start again. KafkaJS
    // rejoins the group then (its consumer restarts), and the engine checks its checkpoints against
    // the new log at the join (CHECKPOINT_AHEAD_OF_LOG): do the same.
    for (const topic of this.options.topics) {
      const id = metadata.topics.get(topic)?.id;
      if (id === undefined) continue;
      const known = state.topicIds.get(topic);
      if (known === undefined) state.topicIds.set(topic, id);
      else if (known !== id) {
        this.options.log.warn(
          { topic },
          "the topic was recreated (its topic id changed): joining the group again",
        );
        this.rejoin(state.generation);
        return;
      }
    }
    const now = Date.now();
    let nextDue = Infinity;
    let leaderless = false;
    const byNode = new Map<number, PartitionState[]>();
    for (const p of state.partitions.values()) {
      if (p.position === undefined || p.fetching || this.paused.has(p.key)) continue;
      if (p.notBefore > now) {
        nextDue = Math.min(nextDue, p.notBefore);
        continue;
      }
      const leader = metadata.topics.get(p.topic)?.partitions[p.partition]?.leader;
      if (leader === undefined || leader < 0) {
        leaderless = true;
        continue;
      }
      if (this.busyNodes.has(leader)) continue;
      byNode.set(leader, [...(byNode.get(leader) ?? []), p]);
    }
    for (const [node, partitions] of byNode) void this.fetchFrom(state, node, partitions, metadata);
    if (leaderless) {
      // No leader known (an election, a deleted topic): look again with fresh metadata.
      consumer.clearMetadata();
      nextDue = Math.min(nextDue, now + (this.options.retryInitialMs ?? 1000));
    }
    if (nextDue !== Infinity) this.schedulePump(Math.max(1, nextDue - now));
  }

  /** One Fetch request to `node` for `partitions`; hands over what it returns, then pumps again. */
  private async fetchFrom(
    state: Generation,
    node: number,
    partitions: PartitionState[],
    metadata: Awaited<ReturnType<Consumer["metadata"]>>,
  ): Promise<void> {
    const consumer = this.consumer!;
    const requested = new Map<PartitionKey, bigint>();
    const topics = new Map<
      string,
      { topicId: string; partitions: Parameters<Consumer["fetch"]>[0]["topics"][number]["partitions"] }
    >();
    for (const p of partitions) {
      const topicId = metadata.topics.get(p.topic)!.id;
      let entry = topics.get(p.topic);
      if (entry === undefined) topics.set(p.topic, (entry = { topicId, partitions: [] }));
      entry.partitions.push({
        partition: p.partition,
        fetchOffset: p.position!,
        partitionMaxBytes: this.limits.maxBytesPerPartition,
        currentLeaderEpoch: -1,
        lastFetchedEpoch: -1,
      });
      requested.set(p.key, p.position!);
      p.fetching = true;
    }
    this.busyNodes.add(node);
    const topicNames = new Map([...topics].map(([name, { topicId }]) => [topicId, name]));
    let response: FetchResponse | undefined;
    let failure: unknown;
    try {
      response = await consumer.fetch({
        node,
        topics: [...topics.values()],
        maxBytes: this.limits.maxBytes,
        maxWaitTime: FETCH_MAX_WAIT_MS,
        minBytes: 1,
        isolationLevel: this.lib!.FetchIsolationLevels.READ_COMMITTED,
      });
    } catch (error) {
      failure = error;
    } finally {
      this.busyNodes.delete(node);
      for (const p of partitions) p.fetching = false;
    }
    if (this.stopRequested) return;
    // A later generation may wait for this broker: its fetch goes out now.
    if (!state.active) return this.schedulePump(0);
    if (failure !== undefined) await this.onFetchError(state, partitions, topicNames, requested, failure);
    else this.handOver(state, response!, topicNames, requested);
    this.schedulePump(0);
  }

  /**
   * Hands over each partition's records of a fetch response as one batch, stamped with `state`'s
   * generation; moves each partition's position past the fetch's last offset.
   */
  private handOver(
    state: Generation,
    response: FetchResponse,
    topicNames: Map<string, string>,
    requested: Map<PartitionKey, bigint>,
  ): void {
    for (const topicResponse of response.responses) {
      const topic = topicNames.get(topicResponse.topicId);
      if (topic === undefined) continue;
      for (const partitionResponse of topicResponse.partitions) {
        const key = partitionKey(topic, partitionResponse.partitionIndex);
        const p = state.partitions.get(key);
        const fetchOffset = requested.get(key);
        // A partition of the broker's fetch session not asked for now, or moved meanwhile: stale.
        if (p === undefined || fetchOffset === undefined || p.position !== fetchOffset) continue;
        p.failures = 0;
        const batch = fetchedBatch(
          { topic, partition: p.partition },
          state.generation,
          fetchOffset,
          partitionResponse.highWatermark,
          partitionResponse.records ?? [],
          partitionResponse.abortedTransactions,
        );
        if (batch === undefined) continue;
        p.position = BigInt(batch.throughOffset) + 1n;
        this.listener?.fetched(batch);
        this.options.log.debug(
          { topic, partition: p.partition, generation: state.generation, throughOffset: batch.throughOffset },
          "fetch handed over",
        );
      }
    }
  }

  /**
   * A failed fetch. OFFSET_OUT_OF_RANGE moves the partition to its log start offset, with a
   * warning (KafkaJS does the same with `fromBeginning`; docs/design.md); an error no retry can fix
   * (an ACL) stops the member; anything else backs the partitions off and fetches them again.
   */
  private async onFetchError(
    state: Generation,
    partitions: PartitionState[],
    topicNames: Map<string, string>,
    requested: Map<PartitionKey, bigint>,
    error: unknown,
  ): Promise<void> {
    const lib = this.lib!;
    const log = this.options.log;
    if (lib.findErrorBy(error as Error, "apiId", "OFFSET_OUT_OF_RANGE") !== null) {
      await this.onOffsetOutOfRange(state, topicNames, requested, error);
      return;
    }
    // The library refreshes its metadata after some fetch errors only (not UNKNOWN_TOPIC_OR_PARTITION).
    if (STALE_TOPIC_ERRORS.some((id) => lib.findErrorBy(error as Error, "apiId", id) !== null))
      this.consumer!.clearMetadata();
    if (this.isFatal(error, FATAL_FETCH_ERRORS)) {
      this.listener?.crashed(
        new ReplayableError("KAFKA", `fetching failed: ${errorMessage(error)}`, { cause: error }),
      );
      return;
    }
    const now = Date.now();
    for (const p of partitions) {
      const delayMs = backoffDelayMs(
        p.failures++,
        this.options.retryInitialMs ?? 1000,
        this.options.retryMaxMs ?? 30_000,
      );
      p.notBefore = now + delayMs;
    }
    log.warn(
      { err: error, partitions: partitions.map((p) => p.key) },
      "fetch failed; fetching these partitions again after a back-off",
    );
  }

  /**
   * {@link onFetchError}'s OFFSET_OUT_OF_RANGE: each partition the response names, still at the
   * requested offset in an active generation, moves to its log start offset (from the response, or
   * listed when the response has none), with a warning.
   */
  private async onOffsetOutOfRange(
    state: Generation,
    topicNames: Map<string, string>,
    requested: Map<PartitionKey, bigint>,
    error: unknown,
  ): Promise<void> {
    for (const topicResponse of responseOf(error)?.responses ?? []) {
      const topic = topicNames.get(topicResponse.topicId);
      if (topic === undefined) continue;
      for (const pr of topicResponse.partitions) {
        if (pr.errorCode !== OFFSET_OUT_OF_RANGE_CODE) continue;
        const key = partitionKey(topic, pr.partitionIndex);
        const p = state.partitions.get(key);
        if (p === undefined || p.position !== requested.get(key)) continue;
        const logStart =
          pr.logStartOffset >= 0n ? pr.logStartOffset : await this.listLogStart(topic, p.partition);
        if (!state.active || logStart < 0n) continue;
        this.options.log.warn(
          {
            topic,
            partition: p.partition,
            fetchOffset: p.position?.toString(),
            logStartOffset: logStart.toString(),
            highWatermark: pr.highWatermark.toString(),
          },
          "OFFSET_OUT_OF_RANGE: the fetch offset is not in the log (records deleted by retention, or the topic truncated or recreated); fetching again from the log start offset",
        );
        p.position = logStart;
      }
    }
  }

  /** The log start offset of `topic`/`partition` listed from the broker; -1n (with a warning) when that fails. */
  private async listLogStart(topic: string, partition: number): Promise<bigint> {
    try {
      const offsets = await this.consumer!.listOffsets({
        topics: [topic],
        partitions: { [topic]: [partition] },
        timestamp: this.lib!.ListOffsetTimestamps.EARLIEST,
      });
      return offsets.get(topic)?.[partition] ?? -1n;
    } catch (listError) {
      this.options.log.warn({ err: listError, topic, partition }, "listing the log start offset failed");
      return -1n;
    }
  }

  /** True when `error` holds one of the protocol errors `fatal`, or the library says no retry can help. */
  private isFatal(error: unknown, fatal: readonly string[]): boolean {
    const lib = this.lib;
    if (lib === undefined) return false;
    if (fatal.some((id) => lib.findErrorBy(error as Error, "apiId", id) !== null)) return true;
    return lib.findErrorBy(error as Error, "code", "PLT_KFK_AUTHENTICATION") !== null;
  }
}

/** The fetch response an error of the library carries (`response`), on it or on a nested error. */
function responseOf(error: unknown): FetchResponse | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0) {
    const e = queue.shift();
    if (typeof e !== "object" || e === null || seen.has(e)) continue;
    seen.add(e);
    const { response, errors, cause } = e as { response?: unknown; errors?: unknown; cause?: unknown };
    if (typeof response === "object" && response !== null && "responses" in response)
      return response as FetchResponse;
    if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
    queue.push(cause);
  }
  return undefined;
}

/**
 * One partition's fetch as a {@link FetchedBatch}, or undefined when it returned no whole record
 * batch (nothing to hand over; the same offset is fetched again). Records below `fetchOffset` (a
 * compressed batch that begins before it) are left out; so are control records and aborted
 * transactions' records ({@link committedBatches}), whose offsets the batch still covers: its
 * `throughOffset` is the last offset of the last whole record batch, so the position moves past
 * trailing markers and past a batch that compaction emptied (KafkaJS patch 002's case).
 */
export function fetchedBatch(
  tp: TopicPartition,
  generation: number,
  fetchOffset: bigint,
  highWatermark: bigint,
  batches: readonly RecordsBatch[],
  aborted: readonly { producerId: bigint; firstOffset: bigint }[] | null | undefined,
): FetchedBatch | undefined {
  const last = batches[batches.length - 1];
  if (last === undefined) return undefined;
  const through = last.firstOffset + BigInt(last.lastOffsetDelta);
  if (through < fetchOffset) return undefined;
  const entries: [RecordsBatch, RawRecord][] = [];
  for (const batch of committedBatches(batches, aborted)) {
    for (const record of batch.records)
      if (offsetOf(batch, record) >= fetchOffset) entries.push([batch, record]);
  }
  const throughOffset = through.toString();
  const first = entries[0];
  const lastEntry = entries[entries.length - 1];
  let records: KafkaRecord[] | undefined;
  return {
    topic: tp.topic,
    partition: tp.partition,
    generation,
    highWatermark: highWatermark.toString(),
    firstOffset: first === undefined ? throughOffset : offsetOf(...first).toString(),
    lastOffset: lastEntry === undefined ? throughOffset : offsetOf(...lastEntry).toString(),
    throughOffset,
    size: entries.length,
    get records() {
      return (records ??= entries.map(([batch, record]) => toRecord(tp.topic, tp.partition, batch, record)));
    },
  };
}
