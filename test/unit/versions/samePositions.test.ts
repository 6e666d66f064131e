import { describe, expect, it } from "vitest";
import { partitionKey } from "../../../src/topicPartition.js";
import { samePositions } from "../../../src/versions/compareVersions.js";

const row = (partition: number, nextOffset: string) => ({ topic: "t", partition, nextOffset });

describe("samePositions", () => {
  it("compares the checkpoints partition by partition", () => {
    expect(samePositions([row(0, "5"), row(1, "7")], [row(0, "5"), row(1, "7")], new Map())).toBe(true);
    expect(samePositions([row(0, "5")], [row(0, "4")], new Map())).toBe(false);
    expect(samePositions([row(0, "5")], [], new Map())).toBe(false);
  });

  it("regression: a partition one version has no checkpoint on, with nothing left to read below the other's, is at the same position (break-it review)", () => {
    // Records 0..2 were deleted (log start 3): version 1 applied them, version 2 never saw them.
    // Neither will apply anything more there, so promote waited its whole --wait-ms for nothing.
    const logStarts = new Map([[partitionKey("t", 0), "3"]]);
    expect(samePositions([row(0, "3"), row(1, "7")], [row(1, "7")], logStarts)).toBe(true);
    expect(samePositions([row(0, "2")], [], logStarts)).toBe(true);
    // Records past the log start are still to read: not the same position.
    expect(samePositions([row(0, "4")], [], logStarts)).toBe(false);
    // Without the log start, a missing checkpoint is never the same as a row.
    expect(samePositions([row(0, "3")], [], new Map())).toBe(false);
  });
});
