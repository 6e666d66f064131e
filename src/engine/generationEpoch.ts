/**
 * The projection's rebuild epoch as read for one consumer group generation (docs/design.md "The
 * rebuild epoch"). The member starts reading it when the feed reports the assignment, before any
 * transaction of the generation runs; every transaction of the generation waits for it and carries
 * it, and the applying transaction refuses a batch when the database's epoch is newer.
 *
 * The epoch is read on the session that holds the projection's shared advisory lock, and trusted
 * only when that very session was held when the feed reported the join and still answered the
 * read: a rebuild takes the exclusive form of the lock, so no rebuild can have run between the
 * join (before which the generation's fetch positions are not read) and the read. A session lost
 * in between (PostgreSQL away, the backend terminated, a connection gone silent) proves nothing,
 * and the generation is given up: its batches are dropped and the member rejoins the group.
 *
 * The same statement reads the projection's checkpoints, and by the same proof none of them can
 * have been moved back by a rebuild since the join: each is at most the partition's checkpoint for as
 * long as the generation can commit offsets, so it primes the replay fast path (cachedCheckpoint.ts):
 * the generation's first batches below it need no transaction, and are passed over undecoded when
 * the read answers before they are fetched.
 */
import { ReplayableError } from "../errors.js";
import type { OffsetString } from "../offsets.js";
import { partitionKey, type PartitionKey } from "../topicPartition.js";

/**
 * An epoch read on the advisory-lock session: the epoch and the projection's checkpoints read with
 * it (absent: none read), or `lost` when that session is gone.
 */
export type SessionEpochRead =
  | {
      readonly kind: "read";
      readonly epoch: string;
      readonly checkpoints?: ReadonlyMap<PartitionKey, OffsetString>;
    }
  | { readonly kind: "lost" };

/**
 * The session holding the projection's shared advisory lock, as a generation's epoch is read on
 * it ({@link ProjectionLockSession} in projectionLockSession.ts). Each session taken has a serial
 * number of its own, higher than every earlier one.
 */
export interface EpochSession {
  /** The serial of the session that holds the lock now; undefined while none does (lost, taken again). */
  heldSession(): number | undefined;
  /**
   * Reads the projection's rebuild epoch on session `serial`.
   * @returns `lost` when that session is no longer the one held (it was lost, maybe taken again).
   * @throws the query's error when the session is still held but the read failed.
   */
  readRebuildEpoch(serial: number): Promise<SessionEpochRead>;
  /** Resolves true once a session holds the lock (at once when one does), false when `signal` aborts. */
  whenHeld(signal: AbortSignal): Promise<boolean>;
}

/** Options of {@link GenerationEpoch}. */
export interface GenerationEpochOptions {
  readonly generation: number;
  readonly session: EpochSession;
  /** Called once when the generation cannot be trusted: the member rejoins the group. */
  readonly onUnproven: (generation: number) => void;
}

/**
 * One generation's rebuild epoch: read on the lock session held at the join, read again on that
 * session after a failed read, and given up (PROJECTION_REBUILT: the batch is treated as fetched
 * before a rebuild) once that session is gone.
 */
export class GenerationEpoch {
  readonly generation: number;
  /** The lock session held when the generation was reported; undefined: none was. */
  private readonly serial: number | undefined;
  private pending: Promise<string> | undefined;
  private unproven: ReplayableError | undefined;
  /** The checkpoints of the first read, or undefined once it failed (nothing primed). */
  private readonly primed: Promise<ReadonlyMap<PartitionKey, OffsetString> | undefined>;
  private resolvePrimed!: (checkpoints: ReadonlyMap<PartitionKey, OffsetString> | undefined) => void;

  /** Notes the session held now and starts reading at once. */
  constructor(private readonly options: GenerationEpochOptions) {
    this.generation = options.generation;
    this.serial = options.session.heldSession();
    this.primed = new Promise((resolve) => (this.resolvePrimed = resolve));
    this.pending = this.start();
    // A rejection here is seen by the transactions that wait for the epoch, not by the constructor.
    this.pending.catch(() => this.resolvePrimed(undefined));
  }

  /**
   * The checkpoint of `topic`/`partition` as the generation's first epoch read found it, the next
   * offset to apply: a value no rebuild moved back since the join (see the top of this file). Never
   * rejects; resolves undefined when the partition had no checkpoint or that read failed.
   */
  async checkpointOf(topic: string, partition: number): Promise<OffsetString | undefined> {
    return (await this.primed)?.get(partitionKey(topic, partition));
  }

  /**
   * The epoch. A failed read on the session still held rejects its waiters (the transaction counts
   * as failed, and the retry policy waits) and the next call reads again on that session.
   * @throws ReplayableError PROJECTION_REBUILT when the session held at the join is gone (or none
   *   was held): the generation's batches must be dropped; the member rejoins the group.
   */
  value(): Promise<string> {
    if (this.unproven !== undefined) return Promise.reject(this.unproven);
    this.pending ??= this.start();
    return this.pending;
  }

  private start(): Promise<string> {
    const reading = this.read();
    reading.catch(() => {
      if (this.pending === reading) this.pending = undefined;
    });
    return reading;
  }

  private async read(): Promise<string> {
    const read =
      this.serial === undefined
        ? ({ kind: "lost" } as const)
        : await this.options.session.readRebuildEpoch(this.serial);
    if (read.kind === "read") {
      this.resolvePrimed(read.checkpoints);
      return read.epoch;
    }
    if (this.unproven !== undefined) throw this.unproven;
    this.unproven = new ReplayableError(
      "PROJECTION_REBUILT",
      this.serial === undefined
        ? "no PostgreSQL session held the projection's shared advisory lock when this generation began, so a rebuild may have run since its fetch positions were read; rejoining the consumer group"
        : "the PostgreSQL session holding the projection's shared advisory lock was lost before this generation's rebuild epoch was read on it, so a rebuild may have run since its fetch positions were read; rejoining the consumer group",
      { context: { generation: this.generation, unproven: true } },
    );
    this.options.onUnproven(this.generation);
    throw this.unproven;
  }
}
