import { describe, expect, it } from "vitest";
import {
  clampOffset,
  newOffsetFor,
  planReset,
  planTotals,
  replayCounts,
  resetTimestamp,
  type PartitionState,
} from "../../../src/replay/planReset.js";
import type { ResetSpec } from "../../../src/replay/resetSpec.js";

const BIG = 2n ** 53n; // 9007199254740992: the first integer a double cannot tell from its successor

function state(over: Partial<PartitionState> = {}): PartitionState {
  return {
    topic: "t",
    partition: 0,
    logStartOffset: "10",
    highWatermark: "100",
    committedOffset: "60",
    checkpoint: "80",
    ...over,
  };
}

describe("newOffsetFor (kafka-consumer-groups --reset-offsets, KIP-122)", () => {
  it.each<[ResetSpec, Partial<PartitionState>, bigint, bigint | undefined]>([
    [{ kind: "to-earliest" }, {}, 10n, undefined],
    [{ kind: "to-latest" }, {}, 100n, undefined],
    [{ kind: "to-current" }, {}, 60n, undefined],
    [{ kind: "to-current" }, { committedOffset: null }, 100n, undefined],
    [{ kind: "to-offset", offset: 42n }, {}, 42n, undefined],
    [{ kind: "to-offset", offset: 5n }, {}, 10n, 5n],
    [{ kind: "to-offset", offset: 1000n }, {}, 100n, 1000n],
    [{ kind: "shift-by", shift: -15n }, {}, 45n, undefined],
    [{ kind: "shift-by", shift: -1000n }, {}, 10n, -940n],
    [{ kind: "shift-by", shift: 1000n }, {}, 100n, 1060n],
    [{ kind: "to-datetime", text: "x", timestampMs: 1 }, { timestampOffset: "70" }, 70n, undefined],
    [{ kind: "by-duration", text: "x", durationMs: 1n }, { timestampOffset: "100" }, 100n, undefined],
  ])("%o on %o gives %s", (spec, over, offset, requested) => {
    const result = newOffsetFor(spec, state(over));
    expect(result.offset).toBe(offset);
    expect(result.requested).toBe(requested);
  });

  it("refuses --shift-by on a partition without a committed offset, as Kafka does", () => {
    expect(() => newOffsetFor({ kind: "shift-by", shift: 1n }, state({ committedOffset: null }))).toThrow(
      "cannot shift partition t:0, the group has no committed offset for it",
    );
  });

  it("keeps offsets above 2^53 exact", () => {
    const s = state({
      logStartOffset: (BIG - 10n).toString(),
      highWatermark: (BIG + 10n).toString(),
      committedOffset: (BIG + 1n).toString(),
      checkpoint: (BIG + 3n).toString(),
    });
    expect(newOffsetFor({ kind: "shift-by", shift: 2n }, s).offset).toBe(BIG + 3n);
    expect(newOffsetFor({ kind: "to-offset", offset: BIG + 1n }, s).offset).toBe(BIG + 1n);
    expect(newOffsetFor({ kind: "to-offset", offset: BIG * 4n }, s)).toEqual({
      offset: BIG + 10n,
      requested: BIG * 4n,
    });
  });
});

describe("clampOffset", () => {
  it("clamps into [log start offset, high watermark]", () => {
    expect(clampOffset(5n, 10n, 20n)).toBe(10n);
    expect(clampOffset(25n, 10n, 20n)).toBe(20n);
    expect(clampOffset(15n, 10n, 20n)).toBe(15n);
    expect(clampOffset(BIG + 7n, BIG, BIG + 5n)).toBe(BIG + 5n);
  });
});

describe("replayCounts (dry-run counts)", () => {
  it("a reset back from the checkpoint re-reads [new, checkpoint) as duplicates and applies the rest", () => {
    expect(replayCounts(30n, 10n, 100n, 80n)).toEqual({ duplicates: 50n, firstApplies: 20n, skipped: 0n });
  });

  it("a reset to the checkpoint re-reads nothing", () => {
    expect(replayCounts(80n, 10n, 100n, 80n)).toEqual({ duplicates: 0n, firstApplies: 20n, skipped: 0n });
  });

  it("a forward reset past the checkpoint skips the records in between for good", () => {
    expect(replayCounts(90n, 10n, 100n, 80n)).toEqual({ duplicates: 0n, firstApplies: 10n, skipped: 10n });
    expect(replayCounts(100n, 10n, 100n, 80n)).toEqual({ duplicates: 0n, firstApplies: 0n, skipped: 20n });
  });

  it("without a checkpoint everything read is applied, and a forward reset skips from the log start", () => {
    expect(replayCounts(10n, 10n, 100n, null)).toEqual({ duplicates: 0n, firstApplies: 90n, skipped: 0n });
    expect(replayCounts(40n, 10n, 100n, null)).toEqual({ duplicates: 0n, firstApplies: 60n, skipped: 30n });
  });

  it("counts reading from the log start when the new offset is below it (records already deleted)", () => {
    expect(replayCounts(0n, 10n, 100n, 80n)).toEqual({ duplicates: 70n, firstApplies: 20n, skipped: 0n });
    // a checkpoint below the log start: the records in between were deleted unread, not skipped by the reset
    expect(replayCounts(50n, 40n, 100n, 20n)).toEqual({ duplicates: 0n, firstApplies: 50n, skipped: 10n });
  });

  it("regression: a new offset above the high watermark (--to-current of a committed offset set past it) counts reading from the log start, as OFFSET_OUT_OF_RANGE makes the consumer (break-it review)", () => {
    expect(replayCounts(9007199254740993n, 0n, 800n, 700n)).toEqual({
      duplicates: 700n,
      firstApplies: 100n,
      skipped: 0n,
    });
  });

  it("a checkpoint above the high watermark (topic recreated) applies nothing", () => {
    expect(replayCounts(0n, 0n, 5n, 80n)).toEqual({ duplicates: 5n, firstApplies: 0n, skipped: 0n });
  });

  it("stays exact above 2^53", () => {
    expect(replayCounts(BIG + 1n, BIG, BIG + 10n, BIG + 4n)).toEqual({
      duplicates: 3n,
      firstApplies: 6n,
      skipped: 0n,
    });
    expect(replayCounts(BIG * 2n, 0n, BIG * 2n, 1n)).toEqual({
      duplicates: 0n,
      firstApplies: 0n,
      skipped: BIG * 2n - 1n,
    });
  });
});

describe("planReset", () => {
  it("plans every partition and sums the counts as strings", () => {
    const plans = planReset({ kind: "to-earliest" }, [
      state(),
      state({
        partition: 1,
        logStartOffset: "0",
        highWatermark: "9007199254740999",
        checkpoint: "9007199254740993",
      }),
      state({ partition: 2, highWatermark: "90", checkpoint: "95" }),
    ]);
    expect(
      plans.map((p) => [p.newOffset, p.duplicates, p.firstApplies, p.skipped, p.checkpointAheadOfLog]),
    ).toEqual([
      ["10", "70", "20", "0", false],
      ["0", "9007199254740993", "6", "0", false],
      ["10", "80", "0", "0", true],
    ]);
    expect(planTotals(plans)).toEqual({ duplicates: "9007199254741143", firstApplies: "26", skipped: "0" });
  });

  it("records the requested offset when it was clamped", () => {
    const [plan] = planReset({ kind: "to-offset", offset: 99999999999999999n }, [state()]);
    expect(plan).toMatchObject({ newOffset: "100", requestedOffset: "99999999999999999", skipped: "20" });
  });

  it("flags a committed offset above the high watermark (topic recreated or truncated, set by hand)", () => {
    const plans = planReset({ kind: "to-earliest" }, [
      state({ committedOffset: "101" }),
      state({ committedOffset: "100" }),
      state({ committedOffset: null }),
    ]);
    expect(plans.map((p) => p.committedAheadOfLog)).toEqual([true, false, false]);
  });

  it("asks Kafka for offsets by timestamp only for time-based resets", () => {
    expect(resetTimestamp({ kind: "to-datetime", text: "x", timestampMs: 123 }, 0)).toBe(123);
    expect(resetTimestamp({ kind: "by-duration", text: "PT1S", durationMs: 1000n }, 5000)).toBe(4000);
    expect(resetTimestamp({ kind: "to-latest" }, 5000)).toBeUndefined();
  });
});
