import { describe, expect, it } from "vitest";
import { groupActiveMessage } from "../../../src/replay/groupActivity.js";
import {
  auditOffsets,
  groupRefusal,
  historyRefusal,
  isCompacted,
  type RebuildPartition,
} from "../../../src/replay/rebuild.js";

function partition(over: Partial<RebuildPartition> = {}): RebuildPartition {
  return {
    topic: "t",
    partition: 0,
    logStartOffset: "0",
    highWatermark: "40",
    committedOffset: "40",
    checkpoint: "40",
    newOffset: "0",
    records: "40",
    ...over,
  };
}

describe("historyRefusal", () => {
  it("allows a rebuild when every log starts at 0", () => {
    expect(
      historyRefusal(
        { projection: "ledger", partitions: [partition()], missingTopics: [], compactedTopics: [] },
        false,
      ),
    ).toBeUndefined();
  });

  it("refuses when a log start offset is above 0, naming the partition, unless forced", () => {
    const plan = {
      projection: "ledger",
      partitions: [partition(), partition({ partition: 1, logStartOffset: "9007199254740993" })],
      missingTopics: [],
      compactedTopics: [],
    };
    const refusal = historyRefusal(plan, false);
    expect(refusal?.reason).toBe("HISTORY_DELETED");
    expect(refusal?.message).toContain(
      "t:1 log start offset 9007199254740993: records 0 to 9007199254740992 were deleted",
    );
    expect(refusal?.message).toContain("--force");
    expect(historyRefusal(plan, true)).toBeUndefined();
  });

  it("refuses when a topic with checkpoints is gone", () => {
    const refusal = historyRefusal(
      { projection: "ledger", partitions: [], missingTopics: ["old"], compactedTopics: [] },
      false,
    );
    expect(refusal?.message).toContain("topic old has checkpoints but no longer exists");
  });
});

describe("groupRefusal", () => {
  const plan = (partitions: RebuildPartition[]) => ({ projection: "ledger", groupId: "ledgr", partitions });

  it("regression: refuses a group with no committed offset where the projection has checkpoints (another group applied them), unless forced (break-it review)", () => {
    const other = plan([
      partition({ committedOffset: null }),
      partition({
        partition: 1,
        committedOffset: null,
        checkpoint: "9007199254740993",
        highWatermark: "9007199254741000",
      }),
    ]);
    const refusal = groupRefusal(other, false);
    expect(refusal?.reason).toBe("GROUP_HAS_NO_OFFSETS");
    expect(refusal?.message).toContain("cannot rebuild ledger with group ledgr");
    expect(refusal?.message).toContain("t:1 (checkpoint 9007199254740993)");
    expect(refusal?.message).toContain("--force");
    expect(groupRefusal(other, true)).toBeUndefined();
  });

  it("refuses when a whole topic the projection has checkpoints for has no committed offset of the group (a projection fed by two groups), unless forced", () => {
    // The group applied topic t; topic u's records were applied by another group, whose members would
    // go on past the emptied projection's records of u.
    const twoGroups = plan([
      partition(),
      partition({ partition: 1, committedOffset: null }),
      partition({ topic: "u", committedOffset: null }),
      partition({ topic: "u", partition: 1, committedOffset: null, checkpoint: "7" }),
      partition({ topic: "u", partition: 2, committedOffset: null, checkpoint: null }),
    ]);
    const refusal = groupRefusal(twoGroups, false);
    expect(refusal?.reason).toBe("GROUP_HAS_NO_OFFSETS");
    expect(refusal?.message).toContain(
      "cannot rebuild ledger with group ledgr: the group has no committed offset on topic u, where the projection has checkpoints (u:0 (checkpoint 40), u:1 (checkpoint 7))",
    );
    expect(refusal?.message).toContain("--force");
    expect(refusal?.message).not.toContain("t:1");
    // The causes besides another group's: a stop before the first offset commit, expired offsets.
    expect(refusal?.message).toContain("a member stopped before its first offset commit on u");
    expect(refusal?.message).toContain("Kafka expired those offsets (KIP-211");
    expect(groupRefusal(twoGroups, true)).toBeUndefined();
  });

  it("allows the group that applied the projection, and any group of a projection without checkpoints", () => {
    expect(
      groupRefusal(plan([partition({ committedOffset: null }), partition({ partition: 1 })]), false),
    ).toBeUndefined();
    expect(
      groupRefusal(plan([partition({ committedOffset: null, checkpoint: null })]), false),
    ).toBeUndefined();
    expect(groupRefusal(plan([]), false)).toBeUndefined();
    // A recreated topic: Kafka deleted the group's offsets with it, and the checkpoint is above the
    // high watermark (test/integration/engine/recreatedTopic.test.ts rebuilds it).
    expect(
      groupRefusal(plan([partition({ committedOffset: null, highWatermark: "5", checkpoint: "20" })]), false),
    ).toBeUndefined();
  });
});

describe("historyRefusal of compacted topics", () => {
  it("refuses a topic whose cleanup.policy compacts, naming it, unless forced", () => {
    const plan = {
      projection: "ledger",
      partitions: [partition()],
      missingTopics: [],
      compactedTopics: [{ topic: "accounts", cleanupPolicy: "compact,delete" }],
    };
    const refusal = historyRefusal(plan, false);
    expect(refusal?.reason).toBe("HISTORY_COMPACTED");
    expect(refusal?.message).toContain(
      "topic accounts has cleanup.policy=compact,delete: compaction keeps only the latest record per key",
    );
    expect(historyRefusal(plan, true)).toBeUndefined();
    const alsoDeleted = { ...plan, partitions: [partition({ logStartOffset: "5" })] };
    expect(historyRefusal(alsoDeleted, false)?.reason).toBe("HISTORY_DELETED");
  });

  it("reads compact in any cleanup.policy list", () => {
    expect(["compact", "compact,delete", "delete, compact", "COMPACT"].map(isCompacted)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(["delete", ""].map(isCompacted)).toEqual([false, false]);
  });
});

describe("auditOffsets", () => {
  it("records from and to per partition, as strings", () => {
    expect(auditOffsets({ partitions: [partition({ committedOffset: null })], missingTopics: [] })).toEqual({
      partitions: [
        {
          topic: "t",
          partition: 0,
          from: null,
          to: "0",
          checkpoint: "40",
          logStartOffset: "0",
          highWatermark: "40",
        },
      ],
      missingTopics: [],
    });
  });
});

describe("groupActiveMessage", () => {
  it("allows an Empty or Dead group", () => {
    expect(groupActiveMessage("g", "Empty", [], "reset its offsets")).toBeUndefined();
    expect(groupActiveMessage("g", "Dead", [], "reset its offsets")).toBeUndefined();
  });

  it("names each member and what to do", () => {
    const message = groupActiveMessage(
      "g",
      "Stable",
      [{ memberId: "replayable-1-abc", clientId: "replayable", clientHost: "/127.0.0.1" }],
      "reset its offsets",
    );
    expect(message).toContain("consumer group g is Stable with 1 active member; cannot reset its offsets");
    expect(message).toContain("memberId=replayable-1-abc clientId=replayable host=127.0.0.1");
    expect(message).toContain("Stop every member first");
    // Regression (break-it review): it said to check with `status`, which shows no members.
    expect(message).not.toContain("replayable status");
    expect(message).toContain(
      "run the command without --execute to list the members left, and with --execute once none is.",
    );
  });

  it("refuses a group that is rebalancing even before its members are listed", () => {
    expect(groupActiveMessage("g", "PreparingRebalance", [], "rebuild ledger")).toContain("0 active members");
  });
});
