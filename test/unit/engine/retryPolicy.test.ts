import { describe, expect, it } from "vitest";
import { ATTEMPTS_BEFORE_PAUSE, decide } from "../../../src/engine/retryPolicy.js";
import { ReplayableError } from "../../../src/errors.js";

const timing = { initialMs: 100, maxMs: 1000 };

function pgError(code: string): Error {
  return Object.assign(new Error(`SQLSTATE ${code}`), { code });
}

describe("decide: the retry policy of a failed batch transaction", () => {
  it("retries a transient failure in place, with a back-off that grows with the attempt", () => {
    const top = () => 0.999_999;
    expect(decide(pgError("40001"), 1, timing, top)).toEqual({
      action: "retry",
      delayMs: 100,
      kind: "transient",
      reason: "serialization_failure",
    });
    expect(decide(pgError("40P01"), 2, timing, top)).toMatchObject({
      action: "retry",
      delayMs: 200,
      reason: "deadlock",
    });
  });

  it(`counts the partition paused from failure ${ATTEMPTS_BEFORE_PAUSE} in a row on, the delay capped`, () => {
    const top = () => 0.999_999;
    expect(decide(pgError("08006"), ATTEMPTS_BEFORE_PAUSE, timing, top)).toMatchObject({
      action: "pause",
      delayMs: 400,
      reason: "connection",
    });
    expect(decide(pgError("08006"), 30, timing, top)).toMatchObject({ action: "pause", delayMs: 1000 });
  });

  it("retries a fault (a missing table, a bug) like a transient failure: never dead-lettered, classified as a fault", () => {
    expect(decide(pgError("42P01"), 1, timing)).toMatchObject({
      action: "retry",
      kind: "fault",
      reason: "other",
    });
    expect(decide(new TypeError("x is undefined"), 1, timing)).toMatchObject({
      action: "retry",
      kind: "fault",
    });
  });

  it("stops on a ReplayableError that no retry can fix, and retries one that says it can", () => {
    const fatal = new ReplayableError("CHECKPOINT_AHEAD_OF_LOG", "topic recreated");
    expect(decide(fatal, 1, timing)).toEqual({ action: "fatal", error: fatal });
    const retriable = new ReplayableError("DATABASE", "busy", { canRetry: true });
    expect(decide(retriable, 1, timing)).toMatchObject({ action: "retry" });
  });

  it("drops the generation of a batch fetched before a rebuild: neither a retry nor fatal", () => {
    const rebuilt = new ReplayableError("PROJECTION_REBUILT", "rebuilt after the batch was fetched");
    expect(decide(rebuilt, 1, timing)).toEqual({ action: "dropGeneration", error: rebuilt });
    expect(decide(rebuilt, ATTEMPTS_BEFORE_PAUSE, timing)).toEqual({
      action: "dropGeneration",
      error: rebuilt,
    });
  });

  it("jitters the delay within [base/2, base]", () => {
    expect(decide(pgError("40001"), 1, timing, () => 0)).toMatchObject({ delayMs: 50 });
  });
});
