import { describe, expect, it } from "vitest";
import { unreadPartitions } from "../../../src/replay/prune.js";

describe("unreadPartitions (what prune waits for)", () => {
  const ends = new Map([
    [
      "t",
      [
        { partition: 0, logStartOffset: "0", highWatermark: "10" },
        { partition: 1, logStartOffset: "5", highWatermark: "9007199254740995" },
        { partition: 2, logStartOffset: "7", highWatermark: "7" },
        { partition: 3, logStartOffset: "20", highWatermark: "30" },
      ],
    ],
  ]);

  it("counts [max(checkpoint, log start), high watermark) per partition; none without records", () => {
    const unread = unreadPartitions(ends, [
      { topic: "t", partition: 0, nextOffset: "10" },
      { topic: "t", partition: 1, nextOffset: "9007199254740993" },
      { topic: "t", partition: 3, nextOffset: "12" },
    ]);
    expect(unread.map((u) => [u.partition, u.checkpoint, u.unread])).toEqual([
      [1, "9007199254740993", "2"],
      [3, "12", "10"],
    ]);
  });

  it("counts a partition without a checkpoint from its log start offset", () => {
    expect(unreadPartitions(ends, []).map((u) => [u.partition, u.unread])).toEqual([
      [0, "10"],
      [1, "9007199254740990"],
      [3, "10"],
    ]);
  });
});
