/**
 * The read_committed filter of the @platformatic/kafka adapter (src/kafka/platformatic/abortedTransactions.ts)
 * on record batches built here as a broker sends them: which batches a fetch hands over. Issue 30:
 * the library's own filter keeps one aborted range per producer per fetch and drops nothing of a
 * transaction whose ABORT marker is in a later fetch; these are the cases it got wrong, and those
 * of KafkaJS patch 001 (patches/README.md).
 */
import { describe, expect, it } from "vitest";
import {
  committedBatches,
  type BatchHeader,
} from "../../../../src/kafka/platformatic/abortedTransactions.js";

const TRANSACTIONAL = 1 << 4;
const CONTROL = 1 << 5;

interface TestBatch extends BatchHeader {
  readonly name: string;
}

/** A data batch of `count` records of producer `pid` (transactional unless pid is -1) at `offset`. */
function data(name: string, offset: number, pid: number, count = 1): TestBatch {
  return {
    name,
    firstOffset: BigInt(offset),
    lastOffsetDelta: count - 1,
    attributes: pid >= 0 ? TRANSACTIONAL : 0,
    producerId: BigInt(pid),
    records: Array.from({ length: count }, () => ({ key: null })),
  };
}

/** A transaction marker of producer `pid` at `offset`: control key version 0, type 0 (ABORT) or 1 (COMMIT). */
function marker(kind: "abort" | "commit", offset: number, pid: number): TestBatch {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(kind === "abort" ? 0 : 1, 2);
  return {
    name: `${kind}-${pid}`,
    firstOffset: BigInt(offset),
    lastOffsetDelta: 0,
    attributes: TRANSACTIONAL | CONTROL,
    producerId: BigInt(pid),
    records: [{ key }],
  };
}

const aborted = (producerId: number, firstOffset: number) => ({
  producerId: BigInt(producerId),
  firstOffset: BigInt(firstOffset),
});

const names = (batches: TestBatch[]) => batches.map((b) => b.name);

describe("the platformatic adapter's read_committed filter", () => {
  it("drops two aborted transactions of the same producer before its committed one, in one fetch", () => {
    const batches = [
      data("a-aborted-1", 0, 7),
      data("a-aborted-2", 1, 7),
      marker("abort", 2, 7),
      data("a-aborted-3", 3, 7),
      marker("abort", 4, 7),
      data("a-committed-1", 5, 7),
      marker("commit", 6, 7),
    ];
    expect(names(committedBatches(batches, [aborted(7, 0), aborted(7, 3)]))).toEqual(["a-committed-1"]);
  });

  it("drops the part of an aborted transaction fetched before its ABORT marker (it straddles two fetches)", () => {
    // First fetch: the transaction's first batches only; the broker lists it with its first offset.
    const first = [data("b-aborted-1", 10, 8), data("b-aborted-2", 11, 8)];
    expect(committedBatches(first, [aborted(8, 10)])).toEqual([]);
    // Second fetch from 12: listed again (it overlaps the fetch), its first offset below the fetch's.
    const second = [
      data("b-aborted-3", 12, 8),
      marker("abort", 13, 8),
      data("b-committed-1", 14, 8),
      marker("commit", 15, 8),
    ];
    expect(names(committedBatches(second, [aborted(8, 10)]))).toEqual(["b-committed-1"]);
  });

  it("switches on every aborted transaction listed, in the order of first offsets whatever the broker's order", () => {
    // Two producers interleaved, the later-begun transaction aborted first (KafkaJS patch 001's case).
    const batches = [
      data("a-aborted-1", 0, 1),
      data("b-aborted-1", 1, 2),
      data("a-aborted-2", 2, 1),
      marker("abort", 3, 2),
      marker("abort", 4, 1),
      data("plain", 5, -1),
    ];
    expect(names(committedBatches(batches, [aborted(2, 1), aborted(1, 0)]))).toEqual(["plain"]);
  });

  it("keeps committed and non-transactional batches and drops every control batch", () => {
    const batches = [
      data("plain-1", 0, -1, 3),
      data("c-1", 3, 5, 2),
      marker("commit", 5, 5),
      data("plain-2", 6, -1),
    ];
    expect(names(committedBatches(batches, null))).toEqual(["plain-1", "c-1", "plain-2"]);
  });

  it("keeps a committed transaction of a producer whose earlier transaction aborted in the same fetch", () => {
    const batches = [
      data("aborted", 0, 3),
      marker("abort", 1, 3),
      data("committed", 2, 3),
      marker("commit", 3, 3),
    ];
    expect(names(committedBatches(batches, [aborted(3, 0)]))).toEqual(["committed"]);
  });
});
