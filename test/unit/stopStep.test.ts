/**
 * src/support/stopStep.ts: a graceful stop names the step it waits on (a review found a member's
 * stop waiting 27 s on a LeaveGroup queued behind a parked JoinGroup with nothing logged above info,
 * then exiting 1 on the shutdown timeout). Fake timers: only the clock is faked, the log is pino's.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { STOP_STEP_WARN_MS, stopStep } from "../../src/support/stopStep.js";

interface Line {
  level: number;
  msg: string;
  step?: string;
  waitingMs?: number;
}

function capture() {
  const lines: Line[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  return { log, lines };
}

describe("stopStep", () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "performance"] }));
  afterEach(() => vi.useRealTimers());

  it("warns every 5 s while the step waits, naming it and how long, and stops when it ends", async () => {
    const { log, lines } = capture();
    let finish!: (value: string) => void;
    const step = stopStep(log, "the JoinGroup under way", () => new Promise<string>((r) => (finish = r)));
    await vi.advanceTimersByTimeAsync(STOP_STEP_WARN_MS - 1);
    expect(lines).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(STOP_STEP_WARN_MS);
    expect(lines.map(({ level, msg, step: s, waitingMs }) => ({ level, msg, s, waitingMs }))).toEqual([
      {
        level: 40,
        msg: "graceful stop: still waiting for the JoinGroup under way",
        s: "the JoinGroup under way",
        waitingMs: 5000,
      },
      {
        level: 40,
        msg: "graceful stop: still waiting for the JoinGroup under way",
        s: "the JoinGroup under way",
        waitingMs: 10000,
      },
    ]);
    finish("left");
    await expect(step).resolves.toBe("left");
    await vi.advanceTimersByTimeAsync(3 * STOP_STEP_WARN_MS);
    expect(lines).toHaveLength(2);
  });

  it("logs nothing for a step that ends sooner, and rejects as the step does, then goes quiet", async () => {
    const { log, lines } = capture();
    await expect(stopStep(log, "the offset commits", () => Promise.resolve(1))).resolves.toBe(1);
    await expect(
      stopStep(log, "the LeaveGroup", () => Promise.reject(new Error("NOT_COORDINATOR"))),
    ).rejects.toThrow("NOT_COORDINATOR");
    await vi.advanceTimersByTimeAsync(3 * STOP_STEP_WARN_MS);
    expect(lines).toEqual([]);
  });
});
