/**
 * The memory plan (src/engine/memoryPlan.ts): the budget shared by the assigned partitions, Node's
 * per-record overhead counted, the Java consumer's 1 MiB cap and the operator's caps, and
 * transactions sized from the records seen.
 */
import { describe, expect, it } from "vitest";
import {
  ASSUMED_BYTES_PER_RECORD,
  JAVA_FETCH_MAX_BYTES,
  JAVA_MAX_PARTITION_FETCH_BYTES,
  MAX_TRANSACTION_RECORDS,
  MIN_FETCH_BYTES,
  NODE_BYTES_PER_RECORD,
  TRANSACTION_LATENCY_GOAL_MS,
  MIN_LATENCY_TRANSACTION_RECORDS,
  planMemory,
  transactionFetches,
  type MemoryPlanInput,
} from "../../../src/engine/memoryPlan.js";
import { MemoryBudget } from "../../../src/engine/memoryBudget.js";
import type { MemoryPlan } from "../../../src/engine/memoryPlan.js";

const MiB = 1_048_576;

const input = (overrides: Partial<MemoryPlanInput> = {}): MemoryPlanInput => ({
  budgetBytes: 16 * MiB,
  assignedPartitions: 6,
  prefetch: true,
  concurrently: 8,
  observed: { bytesPerRecord: 700, msPerRecord: 0.02 },
  caps: {},
  ...overrides,
});

describe("planMemory: the fetch size per partition", () => {
  it("shares the budget: partitions × (applied + prefetched + in flight) + the transactions running, with Node's overhead per record", () => {
    const plan = planMemory(input());
    // 6 × 3 + min(6, 8) = 24 shares; a wire byte of 700-byte records costs 1 + 1200/700 in Node.
    const fair = (16 * MiB) / (24 * (1 + NODE_BYTES_PER_RECORD / 700));
    expect(plan.fetchBytesPerPartition).toBe(Math.floor(fair / 1024) * 1024);
    expect(plan.fetchBytesPerPartition).toBeLessThanOrEqual(fair);
    expect(plan.fetchBytesPerPartition).toBeGreaterThan(fair - 1024);
  });

  it("halves when the partitions double (a rebalance), as long as the transactions running do too", () => {
    const three = planMemory(input({ assignedPartitions: 3 })).fetchBytesPerPartition;
    const six = planMemory(input({ assignedPartitions: 6 })).fetchBytesPerPartition;
    expect(Math.abs(three - 2 * six)).toBeLessThanOrEqual(1024);
    // Past REPLAYABLE_PARTITIONS_CONCURRENTLY only the held batches grow, and each of the 8
    // transactions running may hold two fetches: 24 × 3 + 8 × 2 shares.
    const many = planMemory(input({ assignedPartitions: 24, budgetBytes: 64 * MiB })).fetchBytesPerPartition;
    expect(many).toBe(Math.floor((64 * MiB) / (88 * (1 + NODE_BYTES_PER_RECORD / 700)) / 1024) * 1024);
  });

  it("without prefetch holds one batch fewer per partition", () => {
    const on = planMemory(input({ assignedPartitions: 4 })).fetchBytesPerPartition;
    const off = planMemory(input({ assignedPartitions: 4, prefetch: false })).fetchBytesPerPartition;
    // 4 × 3 + 4 = 16 shares against 4 × 2 + 4 = 12.
    expect(off / on).toBeCloseTo(16 / 12, 1);
  });

  it("gives small records smaller fetches: Node's overhead per record is a larger share of them", () => {
    const small = planMemory(input({ observed: { bytesPerRecord: 200, msPerRecord: undefined } }));
    const large = planMemory(input({ observed: { bytesPerRecord: 4096, msPerRecord: undefined } }));
    expect(small.fetchBytesPerPartition).toBeLessThan(large.fetchBytesPerPartition / 2);
  });

  it("assumes small records before any was seen", () => {
    expect(planMemory(input({ observed: undefined }))).toEqual(
      planMemory(input({ observed: { bytesPerRecord: ASSUMED_BYTES_PER_RECORD, msPerRecord: undefined } })),
    );
  });

  it("is capped at 1 MiB (Java's max.partition.fetch.bytes) and at REPLAYABLE_MAX_BATCH_BYTES when set", () => {
    const big = input({ budgetBytes: 4096 * MiB, observed: { bytesPerRecord: 4096, msPerRecord: 0.05 } });
    expect(planMemory(big).fetchBytesPerPartition).toBe(JAVA_MAX_PARTITION_FETCH_BYTES);
    const capped = planMemory({ ...big, caps: { maxBatchBytes: 65_536 } });
    expect(capped.fetchBytesPerPartition).toBe(65_536);
    expect(capped.transactionMaxBytes).toBe(65_536);
  });

  it("never goes below the smallest useful fetch, nor above an operator's cap below it", () => {
    const tiny = input({ budgetBytes: 4 * MiB, assignedPartitions: 200 });
    expect(planMemory(tiny).fetchBytesPerPartition).toBe(MIN_FETCH_BYTES);
    expect(planMemory({ ...tiny, caps: { maxBatchBytes: 2048 } }).fetchBytesPerPartition).toBe(2048);
  });

  it("plans no partitions as one", () => {
    expect(planMemory(input({ assignedPartitions: 0 }))).toEqual(
      planMemory(input({ assignedPartitions: 1 })),
    );
  });
});

describe("planMemory: the fetch response", () => {
  it("is the larger fetch size (below the decode floor) times the partitions, at most 50 MiB (Java's fetch.max.bytes)", () => {
    const plan = planMemory(input());
    expect(plan.fetchMaxBytes).toBe(plan.replayFetchBytesPerPartition * 6);
    const huge = planMemory(
      input({
        budgetBytes: 16384 * MiB,
        assignedPartitions: 200,
        observed: { bytesPerRecord: 4096, msPerRecord: 0.05 },
      }),
    );
    expect(huge.fetchMaxBytes).toBe(JAVA_FETCH_MAX_BYTES);
  });
});

describe("planMemory: the transaction size", () => {
  it("applies a whole fetch in one transaction when the latency goal allows it", () => {
    const plan = planMemory(input({ observed: { bytesPerRecord: 700, msPerRecord: 0.02 } }));
    expect(plan.transactionMaxBytes).toBe(plan.fetchBytesPerPartition);
    expect(plan.transactionMaxRecords).toBe(Math.floor(TRANSACTION_LATENCY_GOAL_MS / 0.02));
  });

  it("holds two fetches when the partitions outnumber the transaction slots (with prefetch), one otherwise", () => {
    const many = planMemory(input({ assignedPartitions: 24 }));
    expect(many.transactionMaxBytes).toBe(2 * many.fetchBytesPerPartition);
    const noPrefetch = planMemory(input({ assignedPartitions: 24, prefetch: false }));
    expect(noPrefetch.transactionMaxBytes).toBe(noPrefetch.fetchBytesPerPartition);
    const few = planMemory(input({ assignedPartitions: 8 }));
    expect(few.transactionMaxBytes).toBe(few.fetchBytesPerPartition);
    expect(transactionFetches(9, 8, true)).toBe(2);
    expect(transactionFetches(8, 8, true)).toBe(1);
  });

  it("is bounded by the latency goal at the time per record seen", () => {
    const slow = planMemory(input({ observed: { bytesPerRecord: 700, msPerRecord: 0.5 } }));
    expect(slow.transactionMaxRecords).toBe(TRANSACTION_LATENCY_GOAL_MS / 0.5);
    const verySlow = planMemory(input({ observed: { bytesPerRecord: 700, msPerRecord: 5000 } }));
    expect(verySlow.transactionMaxRecords).toBe(MIN_LATENCY_TRANSACTION_RECORDS);
  });

  it("never shrinks a transaction below MIN_LATENCY_TRANSACTION_RECORDS by latency (regression: make bench, 700-byte records on 24 partitions)", () => {
    // A transaction's time is mostly fixed per transaction (round trips, the checkpoint lock, COMMIT)
    // on a busy machine: read as time per record it shrank the next transactions, which made the
    // fixed part weigh more, down to about 24 records a transaction and 340 records/s.
    const slow = planMemory(input({ observed: { bytesPerRecord: 700, msPerRecord: 40 } }));
    expect(slow.transactionMaxRecords).toBe(MIN_LATENCY_TRANSACTION_RECORDS);
    expect(
      planMemory(input({ caps: { maxBatchRecords: 50 }, observed: { bytesPerRecord: 700, msPerRecord: 40 } }))
        .transactionMaxRecords,
    ).toBe(50);
  });

  it("is bounded by REPLAYABLE_MAX_BATCH_RECORDS only when set", () => {
    expect(planMemory(input({ observed: undefined })).transactionMaxRecords).toBe(MAX_TRANSACTION_RECORDS);
    expect(planMemory(input({ caps: { maxBatchRecords: 50 } })).transactionMaxRecords).toBe(50);
  });
});

describe("MemoryBudget", () => {
  const budget = (applied: [MemoryPlan, number][]) =>
    new MemoryBudget({
      budgetBytes: 16 * MiB,
      prefetch: true,
      concurrently: 8,
      caps: {},
      apply: (plan, partitions) => applied.push([plan, partitions]),
    });

  it("applies a plan on every assignment, and one the records seen move by 10% or more", () => {
    const applied: [MemoryPlan, number][] = [];
    const b = budget(applied);
    b.assigned(6);
    expect(applied.map(([, n]) => n)).toEqual([6]);
    const assumed = applied[0]![0].fetchBytesPerPartition;
    // 4 KiB records: a fetch costs far less than the 256-byte records assumed.
    b.observe({ records: 100, bytes: 409_600, transactionMs: 10 });
    expect(applied).toHaveLength(2);
    expect(applied[1]![0].fetchBytesPerPartition).toBeGreaterThan(assumed);
    expect(b.transactionLimits().maxBytes).toBe(applied[1]![0].transactionMaxBytes);
    // The same records again: the estimate does not move, nothing is applied.
    b.observe({ records: 100, bytes: 409_600, transactionMs: 10 });
    expect(applied).toHaveLength(2);
    b.assigned(3);
    expect(applied).toHaveLength(3);
    expect(applied[2]![0].fetchBytesPerPartition).toBeGreaterThan(applied[1]![0].fetchBytesPerPartition);
  });

  it("learns nothing from the replay fast path or a batch of markers", () => {
    const applied: [MemoryPlan, number][] = [];
    const b = budget(applied);
    b.assigned(6);
    b.observe({ records: 100, bytes: 0, transactionMs: undefined });
    b.observe({ records: 0, bytes: 0, transactionMs: 3 });
    expect(applied).toHaveLength(1);
  });
});

describe("planMemory: the fetch size below the decode floor (a replay, KafkaJS patch 009)", () => {
  it("shares the budget per held batch without Node's per-record overhead, within the 1 MiB cap", () => {
    const plan = planMemory(
      input({ budgetBytes: 32 * MiB, observed: { bytesPerRecord: 200, msPerRecord: 0.02 } }),
    );
    // 32 MiB / (6 partitions × 3 held): 1.78 MiB, capped at Java's 1 MiB; records of 200 bytes
    // cost 7× their wire bytes when decoded, so the decoded fetch size is far smaller.
    expect(plan.replayFetchBytesPerPartition).toBe(JAVA_MAX_PARTITION_FETCH_BYTES);
    expect(plan.fetchBytesPerPartition).toBeLessThan(plan.replayFetchBytesPerPartition / 2);
    // The response cap never binds before the per-partition sizes do.
    expect(plan.fetchMaxBytes).toBe(6 * JAVA_MAX_PARTITION_FETCH_BYTES);
  });

  it("stays within the budget with many partitions, the operator's cap, and never below the decoded fetch size", () => {
    const many = planMemory(input({ budgetBytes: 32 * MiB, assignedPartitions: 64 }));
    expect(many.replayFetchBytesPerPartition * 64 * 3).toBeLessThanOrEqual(32 * MiB);
    const capped = planMemory(input({ caps: { maxBatchBytes: 65_536 } }));
    expect(capped.replayFetchBytesPerPartition).toBe(65_536);
    const tiny = planMemory(input({ budgetBytes: 4 * MiB, assignedPartitions: 512 }));
    expect(tiny.replayFetchBytesPerPartition).toBe(tiny.fetchBytesPerPartition);
  });
});
