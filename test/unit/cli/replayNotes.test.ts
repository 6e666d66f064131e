import { describe, expect, it } from "vitest";
import { replayNotes } from "../../../src/cli/commands/replay.js";
import type { PartitionPlan } from "../../../src/replay/planReset.js";

/** One partition's plan: a forward reset to 40 on a log from 10 to 100. */
function forward(checkpoint: string | null, skipped: string): PartitionPlan {
  return {
    topic: "orders",
    partition: 0,
    logStartOffset: "10",
    highWatermark: "100",
    committedOffset: null,
    checkpoint,
    newOffset: "40",
    duplicates: "0",
    firstApplies: "60",
    skipped,
    checkpointAheadOfLog: false,
    committedAheadOfLog: false,
  };
}

describe("replayNotes", () => {
  it("a forward reset past the checkpoint names the checkpoint", () => {
    expect(replayNotes({ partitions: [forward("20", "20")] })).toEqual([
      "WARNING: orders:0: the new offset 40 is past the checkpoint 20: up to 20 records before it will never be applied",
    ]);
  });

  it("a forward reset of a partition without a checkpoint says so, instead of naming a checkpoint 0", () => {
    expect(replayNotes({ partitions: [forward(null, "30")] })).toEqual([
      "WARNING: orders:0: the new offset 40 is past the log start offset 10 and the projection has no checkpoint here (it applied nothing): up to 30 records before it will never be applied",
    ]);
  });

  it("nothing skipped, nothing to say", () => {
    expect(replayNotes({ partitions: [forward("40", "0")] })).toEqual([]);
  });
});
