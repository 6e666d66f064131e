/**
 * Test hooks for crash tests, in the manner of FoundationDB's and TiKV's fail points.
 * Inactive unless REPLAYABLE_FAILPOINTS is set, e.g.
 * `REPLAYABLE_FAILPOINTS=after-db-commit=kill@3,before-db-commit=sleep:2000@1`:
 * at the 3rd time the engine passes `after-db-commit` the process kills itself with SIGKILL.
 * Actions: `kill` (SIGKILL), `throw` (an Error), `sleep:<ms>` (an async wait: timers, heartbeats
 * included, keep running), `block:<ms>` (a busy wait that blocks the event loop, as a long GC pause
 * or a CPU-bound step would: no heartbeat goes out). `@N` fires on the N-th pass only, `@N-M` on
 * passes N to M (default: every pass).
 */
import { setTimeout as delay } from "node:timers/promises";

/** The places the engine marks. */
export type FailpointName =
  | "before-db-commit"
  | "after-db-commit"
  | "after-offset-commit"
  | "in-apply"
  /** Before each offset commit request (docs/design.md "The transaction", step 8); `throw` makes the attempt fail. */
  | "offset-commit"
  /** A generation's rebuild epoch is about to be read (docs/design.md "The rebuild epoch"). */
  | "rebuild-epoch-read"
  /** The member is about to try again to take the advisory lock whose session it lost. */
  | "lock-take-again"
  /** `rebuild --execute` holds the projection's exclusive advisory lock and has changed nothing yet. */
  | "rebuild-locked"
  /** `promote`/`rollback` has switched the views in its transaction and not committed yet. */
  | "promote-before-commit"
  /** `drop-version` has deleted the version's consumer group and not begun its database step. */
  | "drop-version-group-deleted"
  /** A KIP-848 member's ConsumerGroupHeartbeat was answered and the answer not yet taken in. */
  | "group-heartbeat-answered"
  /** A KIP-848 member is about to read the metadata that names a new assignment's topic ids. */
  | "group-assignment-metadata";

interface Failpoint {
  action: "kill" | "throw" | { sleepMs: number } | { blockMs: number };
  /** Passes on which it fires, inclusive; undefined: every pass. */
  from: number | undefined;
  to: number | undefined;
  passes: number;
}

const active = parse(process.env.REPLAYABLE_FAILPOINTS ?? "");

function parse(spec: string): Map<string, Failpoint> {
  const points = new Map<string, Failpoint>();
  for (const part of spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const match = /^([a-z-]+)=(kill|throw|sleep:(\d+)|block:(\d+))(?:@(\d+)(?:-(\d+))?)?$/.exec(part);
    if (!match)
      throw new Error(
        `REPLAYABLE_FAILPOINTS: cannot read "${part}"; expected name=kill|throw|sleep:<ms>|block:<ms>[@N or @N-M]`,
      );
    const [, name, action, sleepMs, blockMs, from, to] = match;
    points.set(name!, {
      action:
        sleepMs !== undefined
          ? { sleepMs: Number(sleepMs) }
          : blockMs !== undefined
            ? { blockMs: Number(blockMs) }
            : (action as "kill" | "throw"),
      from: from === undefined ? undefined : Number(from),
      to: to === undefined ? (from === undefined ? undefined : Number(from)) : Number(to),
      passes: 0,
    });
  }
  return points;
}

/** Marks a fail point; does nothing unless REPLAYABLE_FAILPOINTS names it. */
export async function failpoint(name: FailpointName): Promise<void> {
  const point = active.get(name);
  if (point === undefined) return;
  point.passes += 1;
  if (point.from !== undefined && (point.passes < point.from || point.passes > point.to!)) return;
  if (point.action === "kill") {
    process.stderr.write(`failpoint ${name}: SIGKILL\n`);
    process.kill(process.pid, "SIGKILL");
    await delay(60_000);
  } else if (point.action === "throw") {
    process.stderr.write(`failpoint ${name}: throw\n`);
    throw new Error(`failpoint ${name}`);
  } else if ("blockMs" in point.action) {
    process.stderr.write(`failpoint ${name}: block ${point.action.blockMs}ms\n`);
    const until = Date.now() + point.action.blockMs;
    while (Date.now() < until) {
      // busy wait: the event loop is blocked on purpose
    }
  } else {
    process.stderr.write(`failpoint ${name}: sleep ${point.action.sleepMs}ms\n`);
    await delay(point.action.sleepMs);
  }
}
