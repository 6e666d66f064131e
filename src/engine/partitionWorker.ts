/**
 * One assigned partition's worker: everything this member knows about the partition lives here
 * (the generation it was assigned in, the batches it holds, its cached checkpoint for the replay
 * fast path, its consecutive failures and back-off, whether its fetching is paused). The feed
 * offers it fetched batches; it plans each batch's transactions, runs them one at a time in offset
 * order, and turns each attempt into an {@link Outcome}: applied through an offset, retry from an
 * offset after a delay, or stop with an error. Acting on an outcome (the offset commit, fenced by
 * the batch's generation; the wait; the stop) happens in one place, {@link PartitionWorker.settle}.
 *
 * States ({@link WorkerState}):
 * - `idle`: no batch held; the partition is fetched.
 * - `applying`: a transaction of the oldest batch runs (holding one of the member's
 *   REPLAYABLE_PARTITIONS_CONCURRENTLY transaction slots), or the fast path skips it.
 * - `backingOff`: the transaction failed; the batch waits in memory for the retry policy's delay
 *   (never re-fetched with a seek, so no seek can outlive a rebalance). The wait holds no slot.
 * - `paused`: as `backingOff`, after ATTEMPTS_BEFORE_PAUSE (retryPolicy.ts) failures in a row
 *   (`replayable_paused_partitions`, the "partition paused" log line).
 * - `revoked`: the partition was taken away, or the member stops: batches waiting are dropped, a
 *   back-off ends at once, and a transaction already running finishes and asks for its offset
 *   commit (which the feed skips after a rebalance; the checkpoint row lock fences the transaction);
 *   if it fails, it is not retried and the state stays `revoked`. Ownership is checked before every
 *   attempt and before every back-off, so a failure never overwrites `revoked`.
 *   A batch left unapplied is fetched again by the partition's next owner, from the committed offset.
 * - `failed`: a failure no retry can fix; the member stops.
 * `assign(generation, epoch)` (a rebalance that kept the partition) drops the batches of older
 * generations and the cached checkpoint, ends a back-off of an older generation's batch at once
 * (a transaction of it that fails later is not retried), and goes on with the batches of the new one.
 *
 * Every transaction carries the rebuild epoch read for its batch's generation ({@link
 * GenerationEpoch}), and waits for it. A transaction refused with PROJECTION_REBUILT (the batch was
 * fetched before a rebuild, by a member whose generation ended: docs/design.md "The rebuild
 * epoch"), or whose generation's epoch could not be proven, applied nothing: the worker drops that
 * generation's batches, commits nothing, and asks the member to rejoin the group; the next
 * generation's batches start from the committed offsets (those the rebuild reset).
 *
 * Orthogonal to the state: while the worker holds its lane's depth of batches (the one applied plus,
 * with REPLAYABLE_PREFETCH, one fetched behind it) it asks the feed to pause the partition, and
 * resumes it when a batch is done, so a slow partition never holds more and never stalls the others.
 *
 * A transaction that gets its slot takes the batches waiting behind it into itself (absorbs them),
 * as long as the whole stays within the memory plan's transaction sizes: when a member has more
 * partitions than slots, a partition's prefetched batch arrives while its transaction waits for a
 * slot, and one transaction then applies both, which halves the per-transaction cost (BEGIN, the
 * checkpoint lock and advance, COMMIT, the offset commit). An absorbed batch still counts in the
 * lane; if the transaction fails, the absorbed batches go back to the front of the lane. Only
 * batches of the transaction's own generation are absorbed, while it is the worker's, and only one
 * that starts after the transaction's last offset (`absorb`: KafkaJS can repeat offsets).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { ReplayableError, errorMessage, type PgFailureKind, type RetryReason } from "../errors.js";
import { failpoint } from "../support/failpoints.js";
import type { Feed, FetchedBatch } from "../feed.js";
import { compareOffsets, offsetDistance } from "../offsets.js";
import { recordBytes, type KafkaRecord } from "../record.js";
import type { TopicPartition } from "../topicPartition.js";
import type { BatchResult } from "./applyBatch.js";
import { CachedCheckpoint } from "./cachedCheckpoint.js";
import type { GenerationEpoch } from "./generationEpoch.js";
import type { MemberEvents } from "./memberEvents.js";
import { decide, type RetryTiming } from "./retryPolicy.js";
import {
  belowCheckpoint,
  planTransactions,
  type PlannedTransaction,
  type TransactionLimits,
} from "./transactionPlan.js";

/** The worker's state; see the top of this file. */
export type WorkerState = "idle" | "applying" | "backingOff" | "paused" | "revoked" | "failed";

/** What the worker asks the database to do: one planned transaction of one partition. */
export interface TransactionRequest extends TopicPartition {
  readonly records: readonly KafkaRecord[];
  readonly throughOffset: string;
  /** The high watermark to check the checkpoint against (CHECKPOINT_AHEAD_OF_LOG). */
  readonly highWatermark: string;
  /** The projection's rebuild epoch read for the batch's generation (PROJECTION_REBUILT when older). */
  readonly rebuildEpoch: string;
  /** The partition's logger. */
  readonly log: Logger;
}

/**
 * Runs one dedupe-then-effect transaction (docs/design.md "The transaction", steps 1-7) and reports how long BEGIN to
 * COMMIT took, ms. Throws the transaction's error after its ROLLBACK.
 */
export type TransactionRunner = (
  request: TransactionRequest,
) => Promise<{ readonly result: BatchResult; readonly durationMs: number }>;

/** The result of one attempt at one planned transaction. */
export type Outcome =
  | {
      readonly kind: "applied";
      /** Everything up to `throughOffset` is applied: `result.nextOffset` is the offset to commit. */
      readonly throughOffset: string;
      /** The transaction applied: the planned one, with the batches it absorbed. */
      readonly transaction: PlannedTransaction;
      /** The high watermark of the last batch it covers. */
      readonly highWatermark: string;
      readonly result: BatchResult;
      readonly fastPath: boolean;
      readonly transactionMs: number | undefined;
    }
  | {
      readonly kind: "retry";
      readonly fromOffset: string;
      readonly delayMs: number;
      /** True once the partition has failed ATTEMPTS_BEFORE_PAUSE times in a row (retryPolicy.ts). */
      readonly paused: boolean;
      readonly error: unknown;
      readonly attempt: number;
      readonly errorKind: PgFailureKind;
      readonly reason: RetryReason;
    }
  | { readonly kind: "stop"; readonly error: Error }
  /** PROJECTION_REBUILT: the batch's generation ended before a rebuild; its batches are dropped. */
  | { readonly kind: "rebuilt"; readonly error: ReplayableError }
  /** The batch is no longer this worker's to apply (rebalanced, revoked, the member stops). */
  | { readonly kind: "abandoned" };

/** Options of {@link PartitionWorker}; everything it acts through is injected. */
export interface PartitionWorkerOptions extends TopicPartition {
  /** The generation the partition was assigned in. */
  readonly generation: number;
  /** The rebuild epoch of that generation. */
  readonly rebuildEpoch: GenerationEpoch;
  readonly feed: Pick<Feed, "pause" | "resume" | "commit">;
  readonly events: MemberEvents;
  readonly runTransaction: TransactionRunner;
  /** The member's transaction slots (p-limit): at most REPLAYABLE_PARTITIONS_CONCURRENTLY run at once. */
  readonly slots: <T>(run: () => Promise<T>) => Promise<T>;
  /** The transaction sizes of the member's memory plan now (memoryBudget.ts). */
  readonly limits: () => TransactionLimits;
  readonly timing: RetryTiming;
  /** Hold one more fetched batch behind the one applied (REPLAYABLE_PREFETCH). */
  readonly prefetch: boolean;
  /** Aborted when the member stops. */
  readonly memberSignal: AbortSignal;
  /**
   * Asks the member to rejoin the group: `generation`'s batches were dropped after
   * PROJECTION_REBUILT, and no rebalance would otherwise start (Member.rejoin).
   */
  readonly rejoin: (generation: number) => void;
  /** The partition's high watermark now, asked once before calling a checkpoint ahead of the log. */
  readonly currentHighWatermark: (tp: TopicPartition) => Promise<string | undefined>;
  readonly log: Logger;
  /** For tests: the jitter's random source. */
  readonly random?: () => number;
}

/** The high watermark a batch is checked against, asked afresh at most once per batch. */
interface Watermark {
  value: string;
  rechecked: boolean;
}

const ABANDONED: Outcome = { kind: "abandoned" };

/** The worker of one assigned partition. */
export class PartitionWorker implements TopicPartition {
  readonly topic: string;
  readonly partition: number;
  private generation: number;
  private rebuildEpoch: GenerationEpoch;
  /** A generation whose batch was refused with PROJECTION_REBUILT: its later batches are dropped. */
  private rebuiltGeneration: number | undefined;
  /** Aborted when the generation ends or the partition is revoked: ends a back-off at once. */
  private generationAbort = new AbortController();
  private current: WorkerState = "idle";
  /** Batches fetched and not yet started, oldest first. */
  private readonly waiting: FetchedBatch[] = [];
  /** The batch being applied. */
  private inFlight: FetchedBatch | undefined;
  /** Batches the running transaction took from `waiting` (see the top of this file), oldest first. */
  private absorbed: FetchedBatch[] = [];
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private failures = 0;
  private fetchPaused = false;
  private readonly checkpoint = new CachedCheckpoint();
  /** Settles once the generation's checkpoint, read with its rebuild epoch, is in the cache (or is not to be). */
  private primed: Promise<void>;
  private readonly log: Logger;

  constructor(private readonly options: PartitionWorkerOptions) {
    this.topic = options.topic;
    this.partition = options.partition;
    this.generation = options.generation;
    this.rebuildEpoch = options.rebuildEpoch;
    this.log = options.log.child({ topic: options.topic, partition: options.partition });
    this.primed = this.prime();
  }

  /**
   * Caches the partition's checkpoint as the generation's rebuild epoch read found it (under the
   * same proof, generationEpoch.ts), so a replay's first fetch is passed over too: its batches below
   * the checkpoint are neither decoded (when the read lands before the fetch) nor applied through a
   * transaction. Remembered only in the cache's epoch of this assignment.
   */
  private async prime(): Promise<void> {
    const epoch = this.checkpoint.epoch;
    const checkpoint = await this.rebuildEpoch.checkpointOf(this.topic, this.partition);
    if (checkpoint !== undefined) this.checkpoint.remember(checkpoint, epoch);
  }

  /** The worker's state. */
  get state(): WorkerState {
    return this.current;
  }

  /**
   * {@inheritDoc FeedListener.decodeFloor}: the cached checkpoint while the worker takes batches of
   * its generation, so a replay's batches below it reach the fast path undecoded.
   */
  decodeFloor(): string | undefined {
    if (this.current === "revoked" || this.current === "failed") return undefined;
    if (this.generation === this.rebuiltGeneration) return undefined;
    return this.checkpoint.floor;
  }

  /** Batches held: the one applied, those its transaction absorbed, and those waiting. */
  get held(): number {
    return this.waiting.length + this.absorbed.length + (this.inFlight === undefined ? 0 : 1);
  }

  /** Resolves when the worker holds no batch (every transaction it started has settled). */
  drained(): Promise<void> {
    return this.loop;
  }

  /**
   * A fetched batch of this partition. Kept when it belongs to the worker's generation, dropped
   * otherwise (fetched before a rebalance: the next owner re-reads it from the committed offset).
   */
  offer(batch: FetchedBatch): void {
    if (
      batch.generation !== this.generation ||
      batch.generation === this.rebuiltGeneration ||
      this.current === "revoked" ||
      this.current === "failed"
    ) {
      this.log.debug({ generation: batch.generation, firstOffset: batch.firstOffset }, "stale batch dropped");
      return;
    }
    this.waiting.push(batch);
    this.updateFetchPause();
    if (this.running) return;
    this.running = true;
    this.loop = this.work();
  }

  /**
   * The partition was (re)assigned in `generation`, whose rebuild epoch is `rebuildEpoch`: older
   * batches and the cached checkpoint go.
   */
  assign(generation: number, rebuildEpoch: GenerationEpoch): void {
    this.endGeneration();
    this.generation = generation;
    this.rebuildEpoch = rebuildEpoch;
    if (this.current === "revoked") this.current = this.running ? "applying" : "idle";
    this.checkpoint.forget();
    this.primed = this.prime();
    this.updateFetchPause();
  }

  /** The partition is no longer this member's, or the member stops: see `revoked` above. */
  revoke(): void {
    this.endGeneration();
    if (this.current !== "failed") this.current = "revoked";
    this.updateFetchPause();
  }

  private endGeneration(): void {
    this.generationAbort.abort();
    this.generationAbort = new AbortController();
    this.waiting.length = 0;
  }

  private isCurrent(batch: FetchedBatch): boolean {
    return (
      batch.generation === this.generation &&
      this.current !== "revoked" &&
      this.current !== "failed" &&
      !this.options.memberSignal.aborted
    );
  }

  /** Applies the batches held, oldest first, until none is left. */
  private async work(): Promise<void> {
    for (;;) {
      const batch = this.waiting.shift();
      if (batch === undefined) {
        this.running = false;
        if (this.current !== "revoked" && this.current !== "failed") this.current = "idle";
        return;
      }
      this.inFlight = batch;
      try {
        await this.handle(batch);
      } catch (error) {
        this.fail(error instanceof Error ? error : new Error(errorMessage(error)));
      } finally {
        this.inFlight = undefined;
        this.absorbed = [];
        this.updateFetchPause();
      }
    }
  }

  /** Plans `batch`'s transactions and settles each in turn; stops at the first not applied. */
  private async handle(batch: FetchedBatch): Promise<void> {
    // The generation's epoch read comes first for a transaction anyway; after it the cache may
    // cover the batch, which then needs no transaction.
    await this.primed;
    const watermark: Watermark = { value: batch.highWatermark, rechecked: false };
    const whole = this.checkpoint.covering(batch.throughOffset, batch.highWatermark) !== undefined;
    if (batch.undecoded === true && !whole) {
      this.refetchUndecoded(batch);
      return;
    }
    for (const transaction of planTransactions(batch, this.options.limits(), whole)) {
      const outcome = await this.settle(batch, transaction, watermark);
      if (outcome.kind !== "applied") return;
    }
  }

  /** Attempts `transaction` until an outcome other than retry, acting on each outcome. */
  private async settle(
    batch: FetchedBatch,
    transaction: PlannedTransaction,
    watermark: Watermark,
  ): Promise<Outcome> {
    const startedNs = process.hrtime.bigint();
    for (;;) {
      const outcome = await this.attempt(batch, transaction, watermark);
      switch (outcome.kind) {
        case "applied":
          await this.applied(batch, outcome, startedNs);
          return outcome;
        case "retry":
          if (await this.waitOut(batch, outcome)) continue;
          // The batch is no longer this worker's: the next batch's failures count from one.
          this.failures = 0;
          return ABANDONED;
        case "stop":
          this.fail(outcome.error);
          return outcome;
        case "rebuilt":
          this.dropRebuiltGeneration(batch, outcome.error);
          return outcome;
        case "abandoned":
          this.failures = 0;
          return outcome;
      }
    }
  }

  /** One attempt: the fast path, or one transaction in a slot; its failure judged by the retry policy. */
  private async attempt(
    batch: FetchedBatch,
    transaction: PlannedTransaction,
    watermark: Watermark,
  ): Promise<Outcome> {
    if (!this.isCurrent(batch)) return ABANDONED;
    this.current = "applying";
    const { throughOffset } = transaction;
    const cached = this.checkpoint.covering(throughOffset, watermark.value);
    if (cached !== undefined) {
      const result = belowCheckpoint(transaction, cached);
      const { highWatermark } = batch;
      return {
        kind: "applied",
        throughOffset,
        transaction,
        highWatermark,
        result,
        fastPath: true,
        transactionMs: undefined,
      };
    }
    const epoch = this.checkpoint.epoch;
    const generationEpoch = this.rebuildEpoch;
    try {
      const rebuildEpoch = await generationEpoch.value();
      if (!this.isCurrent(batch)) return ABANDONED;
      return await this.options.slots(async (): Promise<Outcome> => {
        const whole = this.absorb(batch, transaction);
        // The batch's watermark may have been rechecked with Kafka since it was fetched; an
        // absorbed batch's, fetched later, may be higher still. The checkpoint is checked against
        // the higher one.
        const highWatermark = higherOffset(watermark.value, whole.highWatermark);
        const request = {
          topic: this.topic,
          partition: this.partition,
          records: whole.transaction.records ?? batch.records,
          throughOffset: whole.transaction.throughOffset,
          highWatermark,
          rebuildEpoch,
          log: this.log,
        };
        const { result, durationMs } = await this.options.runTransaction(request);
        this.checkpoint.remember(result.checkpoint, epoch);
        return {
          kind: "applied",
          throughOffset: whole.transaction.throughOffset,
          transaction: whole.transaction,
          highWatermark,
          result,
          fastPath: false,
          transactionMs: durationMs,
        };
      });
    } catch (error) {
      this.restoreAbsorbed(batch);
      if (await this.rechecked(error, watermark)) return this.attempt(batch, transaction, watermark);
      return this.failed(error, transaction);
    }
  }

  /**
   * Takes the batches waiting behind `batch` into `transaction`, its last, while the whole stays
   * within the memory plan's transaction sizes (records and bytes). A batch waiting behind one that
   * needs the database needs it too: its offsets are above the cached checkpoint. Only batches of
   * `batch`'s generation, and only while that generation is the worker's: after a rebalance that
   * kept the partition, the lane holds the new generation's batches, fetched again from the
   * committed offset, which may repeat `batch`'s records (the checkpoint, read once per
   * transaction, would not tell the two copies apart). For the same reason only a batch whose first
   * offset is above the transaction's last offset so far: KafkaJS can hand over the same offsets
   * twice within one generation (a metadata refresh during a leader change puts the partition into
   * two brokers' fetches at one offset; an out-of-range reset goes back to the log start without a
   * rejoin). A batch that overlaps or goes back stays waiting and gets a transaction of its own,
   * whose checkpoint counts the copies as duplicates; the apply step refuses records that do not
   * ascend (RECORDS_NOT_ASCENDING, applyBatch.ts) should any other path combine them.
   * @returns the transaction to run, and the high watermark of the last batch taken (undefined: none).
   */
  private absorb(
    batch: FetchedBatch,
    transaction: PlannedTransaction,
  ): { transaction: PlannedTransaction; highWatermark: string | undefined } {
    const unchanged = { transaction, highWatermark: undefined };
    if (!this.isCurrent(batch) || transaction.throughOffset !== batch.throughOffset) return unchanged;
    if (transaction.records === undefined && batch.size > 0) return unchanged;
    const { maxRecords, maxBytes } = this.options.limits();
    let records = transaction.records ?? [];
    let { size, bytes, lastOffset, throughOffset } = transaction;
    let highWatermark: string | undefined;
    for (let next = this.waiting[0]; next !== undefined; next = this.waiting[0]) {
      if (next.generation !== batch.generation || size + next.size > maxRecords) break;
      // Its records were not decoded: only the fast path takes it.
      if (next.undecoded === true) break;
      // Offsets fetched again (see above): the batch gets a transaction of its own.
      if (compareOffsets(next.firstOffset, throughOffset) <= 0) break;
      const nextBytes = next.records.reduce((sum, r) => sum + recordBytes(r), 0);
      if (bytes + nextBytes > maxBytes) break;
      this.absorbed.push(this.waiting.shift()!);
      records = records.concat(next.records);
      size += next.size;
      bytes += nextBytes;
      if (next.size > 0) lastOffset = next.lastOffset;
      throughOffset = next.throughOffset;
      highWatermark = next.highWatermark;
    }
    if (highWatermark === undefined) return unchanged;
    const { firstOffset } = transaction;
    return {
      transaction: { firstOffset, lastOffset, throughOffset, size, bytes, records },
      highWatermark,
    };
  }

  /**
   * A failed transaction's absorbed batches go back to the front of the lane while their
   * generation (`batch`'s, see {@link absorb}) is the worker's; otherwise they are dropped, as the
   * batches waiting were when that generation ended.
   */
  private restoreAbsorbed(batch: FetchedBatch): void {
    if (this.absorbed.length === 0) return;
    if (this.isCurrent(batch)) this.waiting.unshift(...this.absorbed);
    this.absorbed = [];
    this.updateFetchPause();
  }

  /**
   * CHECKPOINT_AHEAD_OF_LOG with the high watermark the fetch brought: a member that was paused
   * meanwhile (GC, SIGSTOP) may hold a batch older than the checkpoint another member wrote. Asks
   * Kafka once more before calling the log truncated, and only once per batch: a producer writing
   * to a recreated topic keeps raising the high watermark, and rechecking until it passes the
   * checkpoint would skip its records as duplicates.
   * @returns true when a higher high watermark was found: attempt again with it.
   */
  private async rechecked(error: unknown, watermark: Watermark): Promise<boolean> {
    if (!(error instanceof ReplayableError) || error.code !== "CHECKPOINT_AHEAD_OF_LOG") return false;
    if (watermark.rechecked) return false;
    watermark.rechecked = true;
    const fresh = await this.options.currentHighWatermark(this).catch(() => undefined);
    if (fresh === undefined || offsetDistance(fresh, watermark.value) <= 0n) return false;
    this.log.info(
      { fetched: watermark.value, current: fresh },
      "batch older than the checkpoint; rechecking",
    );
    watermark.value = fresh;
    return true;
  }

  /** The outcome of a failed attempt, by the retry policy. */
  private failed(error: unknown, transaction: PlannedTransaction): Outcome {
    const attempt = this.failures + 1;
    const decision = decide(error, attempt, this.options.timing, this.options.random);
    if (decision.action === "dropGeneration") {
      this.failures = 0;
      return { kind: "rebuilt", error: decision.error };
    }
    this.failures = attempt;
    if (decision.action === "fatal") return { kind: "stop", error: decision.error };
    return {
      kind: "retry",
      fromOffset: transaction.firstOffset,
      delayMs: decision.delayMs,
      paused: decision.action === "pause",
      error,
      attempt,
      errorKind: decision.kind,
      reason: decision.reason,
    };
  }

  /**
   * Acts on `applied`: asks the feed to commit the offset with the batch's generation (docs/design.md
   * step 8) without holding up the partition's next transaction (the feed keeps a partition's
   * commits in order; a graceful stop waits for them), then tells the observers.
   */
  private async applied(
    batch: FetchedBatch,
    outcome: Extract<Outcome, { kind: "applied" }>,
    startedNs: bigint,
  ): Promise<void> {
    if (!outcome.fastPath) {
      if (this.failures > 0)
        this.log.info({ attempts: this.failures + 1 }, "transaction committed after retries");
      this.failures = 0;
    }
    await failpoint("after-db-commit");
    const { result, transaction } = outcome;
    // Only these fields wait for the offset commit, never the batch or its records: the worker goes
    // on while commits are in flight (a replay skips batches faster than Kafka answers commits), and
    // a batch kept alive by its commit would be memory outside the budget (memoryPlan.ts).
    const committed = {
      topic: this.topic,
      partition: this.partition,
      firstOffset: transaction.firstOffset,
      lastOffset: transaction.lastOffset,
      records: transaction.size,
      bytes: transaction.bytes,
      highWatermark: outcome.highWatermark,
      result,
      fastPath: outcome.fastPath,
      undecoded: batch.undecoded === true,
      transactionMs: outcome.transactionMs,
    };
    void this.options.feed
      .commit(this, result.nextOffset, batch.generation)
      .then(async (offsetCommit) => {
        await failpoint("after-offset-commit");
        const durationMs = Number(process.hrtime.bigint() - startedNs) / 1e6;
        this.options.events.emit("batchCommitted", { ...committed, durationMs, offsetCommit });
      })
      .catch((error: unknown) => this.log.error({ err: error }, "after the offset commit: a step failed"));
  }

  /**
   * Acts on `retry`: logs and reports the failure, then waits out its delay (as `paused` once the
   * partition has failed ATTEMPTS_BEFORE_PAUSE times in a row). Ownership is checked first: a
   * transaction that failed after its partition was revoked, or reassigned in a newer generation
   * (it was running then), is neither waited for nor retried, and the worker's state (`revoked`, or
   * the new generation's) stays as it is; the partition's owner fetches the batch again from the
   * committed offset. The wait is cut short by the next revoke or assignment ({@link endGeneration}
   * aborts the signal of the generation it started in) and by the member's stop.
   * @returns false when the batch is no longer this worker's, or the wait was cut short (rebalance,
   *   revoke, stop): the batch is abandoned.
   */
  private async waitOut(batch: FetchedBatch, outcome: Extract<Outcome, { kind: "retry" }>): Promise<boolean> {
    const { error, errorKind, reason, attempt, delayMs, fromOffset, paused } = outcome;
    const { topic, partition } = this;
    if (!this.isCurrent(batch)) {
      this.log.warn(
        { err: error, kind: errorKind, reason, firstOffset: fromOffset, generation: batch.generation },
        "transaction failed after the partition was revoked or reassigned; not retried",
      );
      return false;
    }
    // The state and the signal of the generation just checked, before any listener runs.
    this.current = paused ? "paused" : "backingOff";
    const signal = AbortSignal.any([this.generationAbort.signal, this.options.memberSignal]);
    this.options.events.emit("retried", {
      topic,
      partition,
      error,
      kind: errorKind,
      reason,
      attempt,
      fromOffset,
      delayMs,
    });
    const fields = {
      err: error,
      kind: errorKind,
      reason,
      attempt,
      retryInMs: delayMs,
      firstOffset: fromOffset,
    };
    // A fault (a bug, a missing table) needs a person; transient failures clear by themselves.
    const level = errorKind === "fault" ? "error" : "warn";
    this.log[level](
      fields,
      paused
        ? "transaction failed; partition paused until the back-off ends"
        : "transaction failed; retrying",
    );
    if (paused) this.options.events.emit("paused", { topic, partition, delayMs });
    const waited = await sleep(delayMs, true, { signal }).catch(() => false);
    if (paused) {
      this.options.events.emit("resumed", { topic, partition });
      if (waited) this.log.info("partition resumed");
    }
    return waited;
  }

  /**
   * Acts on `rebuilt`: the batch's generation ended before a rebuild, or its epoch could not be
   * proven. Drops the batches of that generation held and to come (nothing applied, nothing
   * committed), logs once, and asks the member to rejoin the group: a member the group still counts
   * (its epoch read late) would otherwise wait for a rebalance nothing starts. The lane empties, so
   * the partition's fetching is resumed.
   */
  private dropRebuiltGeneration(batch: FetchedBatch, error: ReplayableError): void {
    if (this.rebuiltGeneration === batch.generation) return;
    this.rebuiltGeneration = batch.generation;
    if (batch.generation === this.generation) this.waiting.length = 0;
    this.log.warn(
      { err: error, generation: batch.generation, firstOffset: batch.firstOffset },
      "projection rebuilt (or its rebuild epoch unproven) after this generation fetched the batch; its batches are dropped and the member rejoins the group",
    );
    this.options.rejoin(batch.generation);
  }

  /**
   * A batch handed over undecoded (below the decode floor this worker gave) that the cached
   * checkpoint does not cover: the cache only moves forward within a generation and the adapter
   * checks the high watermark against the floor, so this means an adapter broke its contract. The
   * records are needed and were not decoded: the generation's batches are dropped and the member
   * rejoins the group, which fetches again from the committed offset (below this batch) with no
   * floor until a transaction of the new generation commits. Logged as an error.
   */
  private refetchUndecoded(batch: FetchedBatch): void {
    if (batch.generation === this.generation) this.waiting.length = 0;
    this.log.error(
      { generation: batch.generation, firstOffset: batch.firstOffset, lastOffset: batch.lastOffset },
      "a batch handed over undecoded is not below the cached checkpoint; fetching again from the committed offset",
    );
    this.options.rejoin(batch.generation);
  }

  /** Stops on a failure no retry can fix: no more batches; the member is told and stops. */
  private fail(error: Error): void {
    if (this.current === "failed") return;
    this.current = "failed";
    this.waiting.length = 0;
    this.options.events.emit("fatal", { error });
  }

  /** Pauses the partition's fetching while the worker's lane is full, resumes it otherwise. */
  private updateFetchPause(): void {
    const full = this.held >= (this.options.prefetch ? 2 : 1);
    if (full === this.fetchPaused) return;
    this.fetchPaused = full;
    if (full) this.options.feed.pause(this);
    else this.options.feed.resume(this);
  }
}

/** The higher of two offsets (decimal strings); `b` absent: `a`. */
function higherOffset(a: string, b: string | undefined): string {
  return b === undefined || compareOffsets(a, b) >= 0 ? a : b;
}
