/**
 * The KafkaJS feed's offset commits without a broker: a fake consumer whose
 * commitOffsetsOfGeneration (KafkaJS patch 006) the test controls. The commit fence, the order of
 * a partition's commits and the background retry.
 */
import type { Consumer } from "kafkajs";
import { describe, expect, it, vi } from "vitest";
import { OffsetCommits } from "../../src/kafka/offsetCommits.js";
import { createLogger } from "../../src/logger.js";

type Commit = { topic: string; partition: number; offset: string };
type Request = Parameters<Consumer["commitOffsetsOfGeneration"]>[0];

function setup(answers: ((commit: Commit) => Promise<void>)[] = []) {
  const sent: string[] = [];
  let generation = 1;
  const commitOffsetsOfGeneration = vi.fn(async (request: Request) => {
    const { topic, partitions } = request.topics[0]!;
    const commit = { topic, ...partitions[0]! };
    const answer = answers.shift();
    if (answer !== undefined) await answer(commit);
    sent.push(`${commit.partition}@${commit.offset}`);
  });
  const commits = new OffsetCommits({
    consumer: { commitOffsetsOfGeneration },
    log: createLogger("silent"),
    stopping: () => false,
    retryInitialMs: 10,
    retryMaxMs: 20,
  });
  commits.newGeneration(generation, { generationId: 100 + generation, memberId: "m" });
  return {
    commits,
    sent,
    commitOffsetsOfGeneration,
    rejoin: () => {
      generation += 1;
      commits.newGeneration(generation, { generationId: 100 + generation, memberId: "m" });
    },
  };
}

const tp = { topic: "t", partition: 0 };

describe("OffsetCommits", () => {
  it("sends a commit of the current generation and skips one of an earlier generation without sending it", async () => {
    const { commits, sent, rejoin } = setup();
    expect(await commits.commit(tp, "10", 1)).toBe("committed");
    rejoin();
    expect(await commits.commit(tp, "20", 1)).toBe("skipped_rebalanced");
    expect(sent).toEqual(["0@10"]);
  });

  it("sends the commits asked while one is in flight as one request of the latest offset, and answers each", async () => {
    let release!: () => void;
    const { commits, sent } = setup([() => new Promise<void>((resolve) => (release = resolve))]);
    const first = commits.commit(tp, "10", 1);
    await vi.waitFor(() => expect(release).toBeTypeOf("function"));
    const waiting = [commits.commit(tp, "20", 1), commits.commit(tp, "40", 1), commits.commit(tp, "30", 1)];
    const other = commits.commit({ topic: "t", partition: 1 }, "5", 1);
    release();
    expect(await Promise.all([first, ...waiting, other])).toEqual(Array(5).fill("committed"));
    // 20 and 30 are covered by 40, and an offset never goes back; the other partition's own.
    expect(sent.filter((c) => c.startsWith("0@"))).toEqual(["0@10", "0@40"]);
    expect(sent.filter((c) => c.startsWith("1@"))).toEqual(["1@5"]);
  });

  it("lands a partition's commits in the order asked, even when the first is slow", async () => {
    const { commits, sent } = setup([() => new Promise((resolve) => setTimeout(resolve, 50))]);
    const results = await Promise.all([commits.commit(tp, "10", 1), commits.commit(tp, "20", 1)]);
    expect(results).toEqual(["committed", "committed"]);
    expect(sent).toEqual(["0@10", "0@20"]);
  });

  it("answers skipped_rebalanced when the coordinator says the group rebalanced", async () => {
    const rebalancing = () =>
      Promise.reject(Object.assign(new Error("rebalance"), { type: "REBALANCE_IN_PROGRESS" }));
    const { commits, sent } = setup([rebalancing]);
    expect(await commits.commit(tp, "10", 1)).toBe("skipped_rebalanced");
    expect(sent).toEqual([]);
  });

  it("after three failed attempts answers failed and retries in the background until the commit lands", async () => {
    const failing = () => Promise.reject(new Error("coordinator not available"));
    const { commits, sent } = setup([failing, failing, failing, failing]);
    expect(await commits.commit(tp, "10", 1)).toBe("failed");
    expect(sent).toEqual([]);
    await vi.waitFor(() => expect(sent).toEqual(["0@10"]), { timeout: 2000 });
  });

  it("forgets a failed commit once a rebalance begins a new generation", async () => {
    vi.useFakeTimers();
    try {
      const failing = () => Promise.reject(new Error("coordinator not available"));
      const { commits, commitOffsetsOfGeneration, rejoin } = setup([failing, failing, failing]);
      const first = commits.commit(tp, "10", 1);
      // The quick attempts wait 200 and 400 ms; the background retry would come 5 to 10 ms later.
      await vi.advanceTimersByTimeAsync(600);
      expect(await first).toBe("failed");
      rejoin();
      await commits.commit({ topic: "t", partition: 1 }, "5", 2);
      // Past every background retry the failed commit would have had.
      await vi.advanceTimersByTimeAsync(1000);
      expect(
        commitOffsetsOfGeneration.mock.calls.map((c) => [
          c[0].generationId,
          c[0].topics[0]!.partitions[0]!.offset,
        ]),
      ).toEqual([
        [101, "10"],
        [101, "10"],
        [101, "10"],
        [102, "5"],
      ]);
    } finally {
      vi.useRealTimers();
    }
  });
});
