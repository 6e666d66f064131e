import { describe, expect, it } from "vitest";
import { formatSeconds, versionProgress } from "../../../src/versions/versionProgress.js";

describe("versionProgress", () => {
  it("records done are the offsets passed since the start offsets; ETA is the lag over the average rate", () => {
    const progress = versionProgress(
      [
        { startOffset: "0", checkpoint: "20", lag: "40" },
        { startOffset: "5", checkpoint: "15", lag: "20" },
      ],
      1_000,
      11_000,
    );
    expect(progress).toEqual({
      recordsDone: "30",
      lag: "60",
      recordsPerSecond: 3,
      etaSeconds: 20,
      eta: "20s",
    });
  });

  it("is caught up when the lag is 0, whatever was done", () => {
    expect(versionProgress([{ startOffset: "0", checkpoint: "40", lag: "0" }], 0, 8_000)).toEqual({
      recordsDone: "40",
      lag: "0",
      recordsPerSecond: 5,
      etaSeconds: 0,
      eta: "caught up",
    });
  });

  it("is unknown while nothing is done yet (no checkpoint, or the checkpoint at the start offset)", () => {
    const progress = versionProgress(
      [
        { startOffset: "0", checkpoint: null, lag: "40" },
        { startOffset: "7", checkpoint: "7", lag: "3" },
        { startOffset: "0", checkpoint: "-", lag: "1" },
      ],
      0,
      60_000,
    );
    expect(progress).toMatchObject({ recordsDone: "0", lag: "44", etaSeconds: null, eta: "unknown" });
  });

  it("rounds the ETA up to a whole second and writes it in hours, minutes and seconds", () => {
    // 7 records in 3 s: 2.33/s; 8,700 left: 3,728.57 s → 3,729 s.
    const progress = versionProgress([{ startOffset: "0", checkpoint: "7", lag: "8700" }], 0, 3_000);
    expect(progress).toMatchObject({ recordsPerSecond: 2.33, etaSeconds: 3729, eta: "1h 2m 9s" });
  });

  it("never counts a checkpoint below the start offset as negative work", () => {
    const progress = versionProgress([{ startOffset: "50", checkpoint: "10", lag: "5" }], 0, 1_000);
    expect(progress).toMatchObject({ recordsDone: "0", eta: "unknown" });
  });

  it("is exact for offsets above 2^53", () => {
    const start = (2n ** 60n).toString();
    const checkpoint = (2n ** 60n + 2n ** 54n + 1n).toString();
    const progress = versionProgress([{ startOffset: start, checkpoint, lag: "1" }], 0, 1_000);
    expect(progress.recordsDone).toBe((2n ** 54n + 1n).toString());
    expect(progress.etaSeconds).toBe(1);
  });

  it("a creation time in the future (clock skew) gives rate 0 and an unknown ETA, not a division by zero", () => {
    const progress = versionProgress([{ startOffset: "0", checkpoint: "5", lag: "5" }], 10_000, 5_000);
    expect(progress).toMatchObject({ recordsPerSecond: 0, etaSeconds: null, eta: "unknown" });
  });
});

describe("formatSeconds", () => {
  it("leaves out units that are 0", () => {
    expect(formatSeconds(0n)).toBe("0s");
    expect(formatSeconds(60n)).toBe("1m");
    expect(formatSeconds(3600n)).toBe("1h");
    expect(formatSeconds(3661n)).toBe("1h 1m 1s");
  });
});
