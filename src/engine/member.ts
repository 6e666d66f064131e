/**
 * The member's loop between the feed and the partition workers: it listens to the {@link Feed}
 * (assignments, fetched batches, the end of membership, a crash), keeps one {@link PartitionWorker}
 * per assigned partition, hands each fetched batch to its partition's worker, and tells the
 * observers through {@link MemberEvents}. Nothing here waits: the feed's calls return at once.
 */
import type { Logger } from "pino";
import type { Feed, FeedListener, FetchedBatch } from "../feed.js";
import { partitionKey, type Assignment, type PartitionKey, type TopicPartition } from "../topicPartition.js";
import { GenerationEpoch, type EpochSession } from "./generationEpoch.js";
import type { MemberEvents } from "./memberEvents.js";
import { PartitionWorker, type PartitionWorkerOptions } from "./partitionWorker.js";

/** What every worker of the member shares. */
export type WorkerSettings = Omit<
  PartitionWorkerOptions,
  | "topic"
  | "partition"
  | "generation"
  | "rebuildEpoch"
  | "feed"
  | "events"
  | "memberSignal"
  | "rejoin"
  | "log"
>;

/** Options of {@link Member}. */
export interface MemberOptions {
  readonly feed: Feed;
  readonly events: MemberEvents;
  readonly workers: WorkerSettings;
  /**
   * The session holding the projection's shared advisory lock: each generation's rebuild epoch is
   * read on it, and trusted only when the session held at the join answered the read
   * (docs/design.md "The rebuild epoch").
   */
  readonly epochSession: EpochSession;
  readonly log: Logger;
}

/** A consumer group member's partitions. `start()` and `stop()` are idempotent. */
export class Member implements FeedListener {
  private readonly workers = new Map<PartitionKey, PartitionWorker>();
  /** The latest generation the feed reported; batches of older ones are dropped. */
  private generation = 0;
  /** The rebuild epoch of the latest generation, read when the feed reported it. */
  private rebuildEpoch: GenerationEpoch | undefined;
  /** The latest generation the member asked the feed to leave by a rejoin. */
  private rejoinAsked = 0;
  private readonly abort = new AbortController();
  private started: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;

  constructor(private readonly options: MemberOptions) {}

  /** True between a group join and the member's stop or crash. */
  get isJoined(): boolean {
    return this.options.feed.isJoined;
  }

  /** Joins the group and starts fetching. @throws as {@link Feed.start}. */
  start(): Promise<void> {
    this.started ??= this.options.feed.start(this);
    return this.started;
  }

  /**
   * Stops gracefully: no new fetches; every worker drops its waiting batches, ends a back-off,
   * and finishes the transaction it runs, whose offset commit still lands; then the member
   * leaves the group.
   */
  stop(): Promise<void> {
    this.abort.abort();
    this.stopped ??= this.options.feed.stop(() => this.drain());
    return this.stopped;
  }

  /** {@inheritDoc FeedListener.assigned} */
  assigned(generation: number, assignment: Assignment): void {
    this.generation = generation;
    // Before any transaction of the generation: each waits for it (docs/design.md "The rebuild epoch").
    const rebuildEpoch = this.generationEpoch(generation);
    this.rebuildEpoch = rebuildEpoch;
    const assigned = new Set<PartitionKey>();
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) {
        const key = partitionKey(topic, partition);
        assigned.add(key);
        const worker = this.workers.get(key);
        if (worker === undefined) this.workers.set(key, this.newWorker(topic, partition, generation));
        else worker.assign(generation, rebuildEpoch);
      }
    }
    for (const [key, worker] of this.workers) {
      if (!assigned.has(key)) worker.revoke();
    }
    this.options.events.emit("assigned", { generation, assignment });
  }

  /** {@inheritDoc FeedListener.unassigned} */
  unassigned(): void {
    this.options.events.emit("revoked", { generation: this.generation });
  }

  /** {@inheritDoc FeedListener.fetched} */
  fetched(batch: FetchedBatch): void {
    if (batch.generation !== this.generation) return;
    const key = partitionKey(batch.topic, batch.partition);
    let worker = this.workers.get(key);
    if (worker === undefined) {
      worker = this.newWorker(batch.topic, batch.partition, batch.generation);
      this.workers.set(key, worker);
    }
    worker.offer(batch);
  }

  /** {@inheritDoc FeedListener.decodeFloor} */
  decodeFloor(tp: TopicPartition): string | undefined {
    return this.workers.get(partitionKey(tp.topic, tp.partition))?.decodeFloor();
  }

  /** {@inheritDoc FeedListener.crashed} */
  crashed(error: Error): void {
    this.options.events.emit("fatal", { error });
  }

  private newWorker(topic: string, partition: number, generation: number): PartitionWorker {
    const { feed, events, log, workers } = this.options;
    this.rebuildEpoch ??= this.generationEpoch(generation);
    return new PartitionWorker({
      ...workers,
      topic,
      partition,
      generation,
      rebuildEpoch: this.rebuildEpoch,
      feed,
      events,
      log,
      memberSignal: this.abort.signal,
      rejoin: (dropped) => this.rejoin(dropped),
    });
  }

  /** The rebuild epoch of `generation`, read on the lock session held now (generationEpoch.ts). */
  private generationEpoch(generation: number): GenerationEpoch {
    return new GenerationEpoch({
      generation,
      session: this.options.epochSession,
      onUnproven: (unproven) => this.rejoin(unproven),
    });
  }

  /**
   * Asks the feed to rejoin the group, once per generation, when `generation` was given up (its
   * epoch unproven, or a batch refused with PROJECTION_REBUILT): its fetchers go on from positions
   * the engine will not apply, and nothing else would start a rebalance. Waits until the lock's
   * session is held again, as the next generation's epoch is read on it; a later join makes the
   * request moot.
   */
  private rejoin(generation: number): void {
    if (generation !== this.generation || generation <= this.rejoinAsked) return;
    this.rejoinAsked = generation;
    const { epochSession, feed, log } = this.options;
    void epochSession.whenHeld(this.abort.signal).then(
      (held) => {
        if (!held || generation !== this.generation || this.abort.signal.aborted) return;
        log.warn({ generation }, "rejoining the consumer group: this generation's batches were dropped");
        feed.rejoin(generation);
      },
      () => undefined,
    );
  }

  /** Revokes every worker and waits until each has settled its transaction in flight. */
  private async drain(): Promise<void> {
    const workers = [...this.workers.values()];
    for (const worker of workers) worker.revoke();
    await Promise.allSettled(workers.map((worker) => worker.drained()));
  }
}
