/**
 * The read_committed filter of the @platformatic/kafka adapter: which record batches of one
 * partition's fetch response the engine may see. The library's own filter
 * (`Consumer#filterUncommittedMessages`, node_modules/@platformatic/kafka/dist/clients/consumer/consumer.js)
 * keeps one aborted range per producer per fetch and drops nothing of a transaction whose ABORT
 * marker is not in the same fetch, so records of aborted transactions were delivered (issue 30; the
 * same class of bug as KafkaJS patch 001, patches/README.md). This is the Java consumer's logic
 * (`CompletedFetch`: `consumeAbortedTransactionsUpTo`, `isBatchAborted`, `containsAbortMarker`).
 */

/** Attribute bits of a record batch (KIP-98's message format v2). */
const IS_TRANSACTIONAL = 1 << 4;
const IS_CONTROL = 1 << 5;
/** The type of a control record (its key: version INT16, type INT16): 0 is ABORT, 1 is COMMIT. */
const ABORT_MARKER = 0;

/** The fields of a record batch the filter reads (the library's `RecordsBatch` has them). */
export interface BatchHeader {
  readonly firstOffset: bigint;
  readonly lastOffsetDelta: number;
  readonly attributes: number;
  /** -1 when the producer is neither idempotent nor transactional. */
  readonly producerId: bigint;
  readonly records: readonly { readonly key: Buffer | null }[];
}

/** One entry of a fetch response's aborted transactions (Fetch v4+, KIP-98). */
export interface AbortedTransaction {
  readonly producerId: bigint;
  /** The offset of the transaction's first record on this partition. */
  readonly firstOffset: bigint;
}

/** True for a control batch whose first record is an ABORT marker (Java's `containsAbortMarker`). */
function isAbortMarker(batch: BatchHeader): boolean {
  if ((batch.attributes & IS_CONTROL) === 0) return false;
  const key = batch.records[0]?.key;
  return key !== null && key !== undefined && key.length >= 4 && key.readInt16BE(2) === ABORT_MARKER;
}

/**
 * The batches of `batches` (one partition's fetch, in offset order) that hold committed or
 * non-transactional records: control batches (transaction markers) and batches of aborted
 * transactions are left out. Every aborted transaction whose first offset is at or below a batch's
 * last offset is switched on before the batch is judged, whatever order the broker listed them in
 * (it lists them in the order they were aborted); its producer stays aborted until its ABORT
 * marker, in this fetch or not (a transaction that straddles two fetches is listed in both, with
 * its first offset). Only a control batch can be that marker. Nothing else is dropped: offsets of
 * the left-out batches still count towards the fetch's end (the caller's `throughOffset`).
 * Source: Kafka's `CompletedFetch` (clients/src/main/java/org/apache/kafka/clients/consumer/internals),
 * KIP-98 "Transactional messaging".
 */
export function committedBatches<B extends BatchHeader>(
  batches: readonly B[],
  aborted: readonly AbortedTransaction[] | null | undefined,
): B[] {
  // Java keeps them in a priority queue ordered by first offset.
  const pending = [...(aborted ?? [])].sort((a, b) =>
    a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0,
  );
  let next = 0;
  const abortedProducers = new Set<bigint>();
  const kept: B[] = [];
  for (const batch of batches) {
    const control = (batch.attributes & IS_CONTROL) !== 0;
    if (batch.producerId >= 0n) {
      const lastOffset = batch.firstOffset + BigInt(batch.lastOffsetDelta);
      while (next < pending.length && pending[next]!.firstOffset <= lastOffset)
        abortedProducers.add(pending[next++]!.producerId);
      if (isAbortMarker(batch)) {
        abortedProducers.delete(batch.producerId);
        continue;
      }
      if ((batch.attributes & IS_TRANSACTIONAL) !== 0 && abortedProducers.has(batch.producerId)) continue;
    }
    if (!control) kept.push(batch);
  }
  return kept;
}
