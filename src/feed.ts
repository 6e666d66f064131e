/**
 * The feed: what a Kafka client adapter gives the engine, and what the engine asks of it. The
 * engine (src/engine/) knows only this interface; `src/kafka/kafkaFeed.ts` implements it over
 * KafkaJS. What an adapter must guarantee is listed in docs/design.md ("A feed adapter's
 * guarantees"); a second client could be added beside it without touching the engine.
 */
import type { KafkaRecord } from "./record.js";
import type { Assignment, TopicPartition } from "./topicPartition.js";

/** Result of committing an offset after the database COMMIT (docs/design.md "The transaction", step 8). */
export type CommitResult = "committed" | "skipped_rebalanced" | "failed";

/**
 * One partition's fetched records, in offset order, stamped with the generation (group join) they
 * were fetched in. `size` is 0 for a fetch that held only transaction markers (control records) or
 * records of aborted transactions: the batch then only moves the checkpoint and the committed
 * offset to {@link FetchedBatch.throughOffset} + 1.
 */
export interface FetchedBatch extends TopicPartition {
  /** The generation the fetch's offsets came from ({@link FeedListener.assigned}). */
  readonly generation: number;
  readonly highWatermark: string;
  /**
   * Offsets of the first and last record and the number of records, known without converting
   * them; with `size` 0 both are `throughOffset`.
   */
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly size: number;
  /**
   * The last offset of the fetch: at or above `lastOffset`, as transaction markers and aborted
   * records that `read_committed` filtered out may follow the last record. Applying the batch
   * covers every offset up to it (Kafka's consumer likewise moves its position past control
   * records; KIP-98).
   */
  readonly throughOffset: string;
  /** The records; an adapter may convert them on first read (the replay fast path never reads them). */
  readonly records: readonly KafkaRecord[];
  /**
   * True when the adapter did not decode the records, as the engine allowed for offsets below its
   * {@link FeedListener.decodeFloor}: `size` counts them, `firstOffset` and `lastOffset` bound them,
   * and reading `records` throws. Only the replay fast path may take such a batch.
   */
  readonly undecoded?: boolean;
}

/** What the feed tells the engine. Each call returns at once: the feed never waits for the engine. */
export interface FeedListener {
  /**
   * A group join: `generation` (higher than every earlier one) and this member's whole assignment.
   * Not called for a join that completes after {@link Feed.stop} began.
   */
  assigned(generation: number, assignment: Assignment): void;
  /** The member holds no partitions any more (it stopped, or the client crashed; a restart rejoins). */
  unassigned(): void;
  /** A fetched batch; the fetch position has already moved past it. */
  fetched(batch: FetchedBatch): void;
  /** A failure no restart can fix (authorization, a setting the broker refuses): the member stops. */
  crashed(error: Error): void;
  /**
   * The offset below which the engine needs no record of `partition` in the current generation
   * (its cached checkpoint: every record below it is applied or dead-lettered), or undefined.
   * Asked when a fetch is sent; an adapter may hand over the records wholly below it undecoded
   * ({@link FetchedBatch.undecoded}), unless the partition's high watermark is below it.
   */
  decodeFloor?(partition: TopicPartition): string | undefined;
}

/** A consumer group member's Kafka side, as the engine drives it. */
export interface Feed {
  /** True between a group join and the member's stop or crash. */
  readonly isJoined: boolean;
  /**
   * Joins the group (a new group starts from the earliest offset) and starts fetching.
   * @throws ReplayableError CONFIG_INVALID naming a topic that does not exist.
   */
  start(listener: FeedListener): Promise<void>;
  /** Stops fetching `partition` until {@link resume}; a pause outlives a rejoin or client restart. */
  pause(partition: TopicPartition): void;
  /** Fetches `partition` again, at once. */
  resume(partition: TopicPartition): void;
  /**
   * Commits `nextOffset` for `partition` in `generation`: skipped (`skipped_rebalanced`) once a later
   * generation began; a partition's commits land in the order asked; a failed one is retried in the
   * background until a later commit of the partition supersedes it or the generation ends.
   */
  commit(partition: TopicPartition, nextOffset: string, generation: number): Promise<CommitResult>;
  /**
   * Leaves `generation` for a new one: the group is joined again and every assigned partition is
   * fetched again from its committed offset, in a new generation ({@link FeedListener.assigned}).
   * The engine asks for it when it gave a generation up (its rebuild epoch unproven, or a batch
   * refused as fetched before a rebuild) and nothing else would start a rebalance. Returns at once;
   * does nothing when a later generation began, a join is under way, or the feed stops.
   */
  rejoin(generation: number): void;
  /**
   * Stops fetching, awaits `drain()` (the engine finishes its transactions and asks for their
   * commits, which land unless a rebalance ended their generation meanwhile: then they are skipped,
   * and the next owner re-reads those records as duplicates), waits for the commits in flight,
   * leaves the group and disconnects. A join that completes during the stop is not reported
   * ({@link FeedListener.assigned}). Each step still waiting is logged (src/support/stopStep.ts).
   */
  stop(drain: () => Promise<void>): Promise<void>;
}
