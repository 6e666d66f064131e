/**
 * Planning a fetched batch's transactions: one per chunk of at most the records and bytes the
 * memory plan allows (memoryPlan.ts: a whole fetch, within REPLAYABLE_MAX_BATCH_RECORDS and
 * REPLAYABLE_MAX_BATCH_BYTES when set; {@link chunkRecords}); the last one covers the
 * fetch up to its last offset (transaction markers and aborted records included). A fetch of
 * markers only, and a batch the replay fast path may skip whole, are one transaction.
 */
import type { FetchedBatch } from "../feed.js";
import { nextOffset, type OffsetString } from "../offsets.js";
import type { KafkaRecord } from "../record.js";
import type { BatchResult } from "./applyBatch.js";
import { chunkRecords, type Chunk } from "./chunk.js";

/**
 * One transaction's share of a fetched batch. `throughOffset` is the last offset it covers: its
 * last record's, or for the batch's last transaction the end of the fetch. `records` is absent for
 * a whole batch the fast path may skip (and for a fetch of transaction markers only), so the
 * records are not converted unless the database is asked.
 */
export interface PlannedTransaction {
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly throughOffset: string;
  readonly size: number;
  /** Bytes of the records' keys, values and headers; 0 when `records` is absent. */
  readonly bytes: number;
  readonly records?: readonly KafkaRecord[];
}

/** Bounds of one transaction. */
export interface TransactionLimits {
  /** The most records (memoryPlan.ts `transactionMaxRecords`). */
  readonly maxRecords: number;
  /** The most bytes (memoryPlan.ts `transactionMaxBytes`), bytes. */
  readonly maxBytes: number;
}

/**
 * The transactions of `batch`, in offset order.
 * @param wholeBelowCheckpoint true when the cached checkpoint covers the whole batch (replay fast
 *   path): one transaction, skipped without reading the records.
 */
export function planTransactions(
  batch: FetchedBatch,
  limits: TransactionLimits,
  wholeBelowCheckpoint: boolean,
): PlannedTransaction[] {
  const { firstOffset, lastOffset, throughOffset, size } = batch;
  if (size === 0 || wholeBelowCheckpoint) return [{ firstOffset, lastOffset, throughOffset, size, bytes: 0 }];
  const transactions = chunkRecords(batch.records, limits.maxRecords, limits.maxBytes).map(ofRecords);
  const last = transactions.pop()!;
  transactions.push({ ...last, throughOffset });
  return transactions;
}

function ofRecords({ records, bytes }: Chunk): PlannedTransaction {
  const lastOffset = records[records.length - 1]!.offset;
  return {
    firstOffset: records[0]!.offset,
    lastOffset,
    throughOffset: lastOffset,
    size: records.length,
    bytes,
    records,
  };
}

/** The result of a transaction the replay fast path skipped: every record is an offset duplicate. */
export function belowCheckpoint(transaction: PlannedTransaction, checkpoint: OffsetString): BatchResult {
  return {
    nextOffset: nextOffset(transaction.throughOffset),
    checkpoint,
    applied: 0,
    duplicates: { offset: transaction.size, event_id: 0 },
    deadLettered: [],
    eventIdsRecorded: 0,
  };
}
