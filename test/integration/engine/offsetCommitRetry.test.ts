/**
 * Regression (issue "Effectively once on a real cluster", fix 10): an offset commit that failed
 * was never retried, so a partition that then went idle kept a stale committed offset (lag that
 * never reached 0, and a re-read of the whole batch by the next owner). It is retried in the
 * background until it succeeds or the group rebalances.
 */
import { expect, it } from "vitest";
import { ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { scrapeMetric, startCliInTest } from "../../helpers/process.js";
import { runArgs } from "../../helpers/replay.js";
import { uniqueName, useStack, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

it("an offset commit that failed is retried while the partition is idle: the committed offset reaches the high watermark", async () => {
  const topic = uniqueName("commit-retry");
  const group = uniqueName("g");
  const stream = await produceLedger(stack.admin, topic, {
    count: 40,
    partitions: 1,
    seed: 7,
    duplicateRate: 0,
  });
  // The first three commit attempts fail: the batch's commit gives up in place ("failed").
  const cli = startCliInTest(runArgs(stack.db.url, topic, group), {
    REPLAYABLE_FAILPOINTS: "offset-commit=throw@1-3",
  });
  const port = await cli.metricsPort();
  await cli.waitForStderr('"msg":"offset commit failed"');
  // Nothing else arrives on the partition: only the background retry can commit.
  await waitForCaughtUp(stack.admin, group, topic, 30_000);
  // The member logs the retry after the broker answered it: the line can reach this process after
  // the committed offset does (the stop CI failed on an immediate check).
  await cli.waitForStderr('"msg":"offset commit retried and committed"', 10_000);
  expect(
    await scrapeMetric(port, "replayable_offset_commits_total", { result: "failed" }),
  ).toBeGreaterThanOrEqual(1);
  expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
});
