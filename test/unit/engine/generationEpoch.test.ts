/**
 * GenerationEpoch's checkpoints (the replay fast path primed at the join): only a read on the
 * session held at the join primes, only the first read counts, and a failed or lost read primes
 * nothing, never rejecting the worker that waits for it.
 */
import { describe, expect, it } from "vitest";
import {
  GenerationEpoch,
  type EpochSession,
  type SessionEpochRead,
} from "../../../src/engine/generationEpoch.js";
import { partitionKey } from "../../../src/topicPartition.js";

function session(held: number | undefined, reads: (() => Promise<SessionEpochRead>)[]): EpochSession {
  return {
    heldSession: () => held,
    readRebuildEpoch: () => reads.shift()!(),
    whenHeld: () => Promise.resolve(held !== undefined),
  };
}

const CHECKPOINTS = new Map([[partitionKey("t", 0), "9007199254740993"]]);

describe("GenerationEpoch.checkpointOf", () => {
  it("answers the checkpoints of the epoch read, undefined for a partition without one", async () => {
    const reads = [
      () => Promise.resolve<SessionEpochRead>({ kind: "read", epoch: "3", checkpoints: CHECKPOINTS }),
    ];
    const epoch = new GenerationEpoch({
      generation: 1,
      session: session(1, reads),
      onUnproven: () => undefined,
    });
    expect(await epoch.value()).toBe("3");
    expect(await epoch.checkpointOf("t", 0)).toBe("9007199254740993");
    expect(await epoch.checkpointOf("t", 1)).toBeUndefined();
    expect(await epoch.checkpointOf("u", 0)).toBeUndefined();
  });

  it("primes nothing when the first read failed, even once a later read answers", async () => {
    const reads = [
      () => Promise.reject(new Error("canceling statement due to statement timeout")),
      () => Promise.resolve<SessionEpochRead>({ kind: "read", epoch: "3", checkpoints: CHECKPOINTS }),
    ];
    const epoch = new GenerationEpoch({
      generation: 1,
      session: session(1, reads),
      onUnproven: () => undefined,
    });
    expect(await epoch.checkpointOf("t", 0)).toBeUndefined();
    expect(await epoch.value()).toBe("3");
    expect(await epoch.checkpointOf("t", 0)).toBeUndefined();
  });

  it("primes nothing when the session held at the join is lost, or none was held", async () => {
    for (const held of [1, undefined]) {
      const unproven: number[] = [];
      const reads = [() => Promise.resolve<SessionEpochRead>({ kind: "lost" })];
      const epoch = new GenerationEpoch({
        generation: 7,
        session: session(held, reads),
        onUnproven: (generation) => unproven.push(generation),
      });
      expect(await epoch.checkpointOf("t", 0)).toBeUndefined();
      await expect(epoch.value()).rejects.toMatchObject({ code: "PROJECTION_REBUILT" });
      expect(unproven).toEqual([7]);
    }
  });
});
