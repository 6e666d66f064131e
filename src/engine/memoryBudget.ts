/**
 * The member's memory budget at run time: what it has seen of its records (bytes per record, and
 * transaction time per record, as moving averages), its assigned partitions, and the plan
 * {@link planMemory} makes of them. A new plan is made on every assignment and when a transaction
 * moves the estimate; it is handed to `apply` (the feed's fetch limits, the gauges, a log line)
 * when it differs from the one applied by at least {@link REPLAN_CHANGE} in a size, or the
 * assignment changed.
 */
import { planMemory, type MemoryPlan, type MemoryPlanInput, type ObservedRecords } from "./memoryPlan.js";
import type { TransactionLimits } from "./transactionPlan.js";

/** The relative change of a planned size that is applied without a rebalance. */
export const REPLAN_CHANGE = 0.1;
/** Weight of one transaction in the moving averages. */
const WEIGHT = 0.2;

/** Options of {@link MemoryBudget}. */
export interface MemoryBudgetOptions extends Omit<MemoryPlanInput, "assignedPartitions" | "observed"> {
  /** Called with each plan to apply, and the partitions it was made for. */
  readonly apply: (plan: MemoryPlan, assignedPartitions: number) => void;
}

/** One committed transaction, as the budget learns from it. */
export interface TransactionSeen {
  readonly records: number;
  /** Bytes of its keys, values and headers. */
  readonly bytes: number;
  /** BEGIN to COMMIT, ms; undefined on the replay fast path (then nothing is learnt). */
  readonly transactionMs: number | undefined;
}

/** See the top of this file. */
export class MemoryBudget {
  private partitions = 0;
  private observed: { bytesPerRecord: number; msPerRecord: number | undefined } | undefined;
  private current: MemoryPlan;

  constructor(private readonly options: MemoryBudgetOptions) {
    this.current = this.planFor(this.partitions);
  }

  /** The plan applied now. */
  get plan(): MemoryPlan {
    return this.current;
  }

  /** The transaction sizes of the plan applied now. */
  transactionLimits(): TransactionLimits {
    return { maxRecords: this.current.transactionMaxRecords, maxBytes: this.current.transactionMaxBytes };
  }

  /** A group join: `partitions` are assigned now. Always applies the plan for them. */
  assigned(partitions: number): void {
    this.partitions = partitions;
    this.current = this.planFor(partitions);
    this.options.apply(this.current, partitions);
  }

  /** A committed transaction: updates the averages, and applies a plan that moved enough. */
  observe(seen: TransactionSeen): void {
    if (seen.transactionMs === undefined || seen.records === 0 || seen.bytes === 0) return;
    const bytesPerRecord = seen.bytes / seen.records;
    const msPerRecord = seen.transactionMs / seen.records;
    const before = this.observed;
    this.observed =
      before === undefined
        ? { bytesPerRecord, msPerRecord }
        : {
            bytesPerRecord: before.bytesPerRecord + WEIGHT * (bytesPerRecord - before.bytesPerRecord),
            msPerRecord:
              before.msPerRecord === undefined
                ? msPerRecord
                : before.msPerRecord + WEIGHT * (msPerRecord - before.msPerRecord),
          };
    const next = this.planFor(this.partitions);
    if (!movedEnough(this.current, next)) return;
    this.current = next;
    this.options.apply(next, this.partitions);
  }

  private planFor(assignedPartitions: number): MemoryPlan {
    const observed: ObservedRecords | undefined = this.observed;
    return planMemory({ ...this.options, assignedPartitions, observed });
  }
}

function movedEnough(a: MemoryPlan, b: MemoryPlan): boolean {
  const moved = (x: number, y: number) => Math.abs(x - y) >= REPLAN_CHANGE * Math.max(x, y);
  return (
    moved(a.fetchBytesPerPartition, b.fetchBytesPerPartition) ||
    moved(a.transactionMaxRecords, b.transactionMaxRecords) ||
    moved(a.transactionMaxBytes, b.transactionMaxBytes)
  );
}
