/**
 * The replay fast path's memory of one partition: its checkpoint as read when the generation began,
 * or as the last transaction this member committed left it, so a fetched batch entirely below it is
 * counted as duplicates without a database round trip. Each PartitionWorker holds one.
 *
 * Why skipping a batch below the cached value never loses a record:
 * - the value is only ever taken from the result of a committed transaction, which read the
 *   checkpoint under its row lock (docs/design.md "The transaction", step 2) and moved it forward only,
 *   or from the statement that read the generation's rebuild epoch on the lock session held since the
 *   join (generationEpoch.ts: no rebuild ran in between), so while the projection is not rebuilt it
 *   is never above the true checkpoint;
 * - every assignment (group join, rebalance) forgets the value and starts a new epoch, and a value
 *   read or committed for an earlier epoch is not remembered. A partition handed to another member
 *   and back is therefore read again from PostgreSQL;
 * - a rebuild moves the checkpoints back (it empties the dedupe state) while the group has no
 *   members, but a member frozen past its session timeout may wake up still in its dead generation,
 *   its cache from before the rebuild. There the fast path only skips: nothing is written, and the
 *   offset commit, stamped with the dead generation, is refused by the group coordinator, so the
 *   next generation (which forgot the value) reads those records again from the offsets the rebuild
 *   reset. Every batch that goes to the database carries the generation's rebuild epoch and is
 *   refused with PROJECTION_REBUILT (docs/design.md "The rebuild epoch").
 * It also refuses to cover a batch whose high watermark is below the cached value (a recreated or
 * truncated topic): that batch goes to the database, which stops the consumer with
 * CHECKPOINT_AHEAD_OF_LOG instead of counting new records as duplicates.
 */
import { parseOffset, type OffsetString } from "../offsets.js";

/** One partition's checkpoint as known to this member since its latest assignment. */
export class CachedCheckpoint {
  private value: bigint | undefined;
  private currentEpoch = 0;

  /**
   * The current epoch: read it before starting a transaction and pass it to {@link remember},
   * so a result that straddles an assignment is dropped.
   */
  get epoch(): number {
    return this.currentEpoch;
  }

  /** True when a checkpoint is cached. */
  get known(): boolean {
    return this.value !== undefined;
  }

  /**
   * The cached checkpoint, or undefined: a batch wholly below it whose high watermark is not below
   * it is covered ({@link covering}), so its records need not be decoded (FeedListener.decodeFloor).
   */
  get floor(): OffsetString | undefined {
    return this.value?.toString();
  }

  /** Forgets the checkpoint and starts a new epoch. Call on every assignment (group join, rebalance). */
  forget(): void {
    this.currentEpoch += 1;
    this.value = undefined;
  }

  /**
   * Remembers `checkpoint` (the next offset to apply, as a committed transaction left it or the
   * generation's epoch read found it) when
   * `epoch` is still the current one and the value is ahead of what is cached; otherwise ignores it.
   * @throws RangeError when `checkpoint` is not a 64-bit offset.
   */
  remember(checkpoint: OffsetString, epoch: number): void {
    if (epoch !== this.currentEpoch) return;
    const value = parseOffset(checkpoint, "checkpoint");
    if (this.value === undefined || value > this.value) this.value = value;
  }

  /**
   * The cached checkpoint when every offset up to `lastOffset` is below it (records fetched in
   * offset order, so the whole batch is already applied or dead-lettered) and the partition's
   * `highWatermark` is not below it; otherwise undefined, and the batch goes to the database.
   * @throws RangeError when an offset is not a 64-bit offset.
   */
  covering(lastOffset: OffsetString, highWatermark: OffsetString): OffsetString | undefined {
    const cached = this.value;
    if (cached === undefined) return undefined;
    if (parseOffset(lastOffset) >= cached) return undefined;
    if (parseOffset(highWatermark, "highWatermark") < cached) return undefined;
    return cached.toString();
  }
}
