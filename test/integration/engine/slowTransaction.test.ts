/**
 * A transaction slower than the session timeout (6000 ms, the broker's minimum; with KIP-848
 * groups the broker's `group.consumer.session.timeout.ms`, 10 s on the local stack,
 * scripts/kafka/kafka.sh): the record is applied once, the member stays in or rejoins the group,
 * and the stream finishes (no endless redelivery of the same batch).
 */
import { describe, expect, it, onTestFailed, onTestFinished } from "vitest";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { scrapeMetric, startCli } from "../../helpers/process.js";
import { TEST_CLIENT_ENV, uniqueName, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const stack = useStack();

const SESSION = { REPLAYABLE_SESSION_TIMEOUT_MS: "6000", REPLAYABLE_HEARTBEAT_INTERVAL_MS: "1000" };
/** Longer than the session timeout of the group protocol under test (see the file's comment), ms. */
const BLOCK_MS = TEST_CLIENT_ENV.KAFKA_GROUP_PROTOCOL === "consumer" ? 14_000 : 9000;

function start(topic: string, group: string, failpoints: string) {
  const cli = startCli(
    [
      "run",
      "--projection",
      "ledger",
      "--topic",
      topic,
      "--group",
      group,
      "--database-url",
      stack.db.url,
      "--no-migrate",
    ],
    { ...SESSION, REPLAYABLE_MAX_BATCH_RECORDS: "10", REPLAYABLE_FAILPOINTS: failpoints },
  );
  onTestFailed(() => {
    process.stderr.write(
      `--- consumer stderr (last lines) ---\n${cli.stderr().split("\n").slice(-30).join("\n")}\n`,
    );
  });
  onTestFinished(async () => {
    cli.child.kill("SIGTERM");
    await cli.exited;
  });
  return cli;
}

describe("a transaction slower than the session timeout", () => {
  it("waiting (not blocking) 9 s: heartbeats continue during the transaction, so the member is never evicted", async () => {
    const topic = uniqueName("slow-tx");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 60,
      partitions: 1,
      seed: 41,
      duplicateRate: 0.1,
    });
    const cli = start(topic, group, "in-apply=sleep:9000@3");
    const port = await cli.metricsPort();
    await cli.waitForStderr("failpoint in-apply: sleep 9000ms");
    await waitForCaughtUp(stack.admin, group, topic);

    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
    expect(await scrapeMetric(port, "replayable_rebalances_total")).toBe(1);
    expect(
      await scrapeMetric(port, "replayable_offset_commits_total", { result: "skipped_rebalanced" }),
    ).toBe(0);
    expect(await scrapeMetric(port, "replayable_duplicates_total", { key: "offset" })).toBe(0);
    expect(cli.child.exitCode).toBeNull();
  });

  it("blocking the event loop past the session timeout: the member is evicted, its offset commit is refused, it rejoins and re-reads the batch as duplicates", async () => {
    const topic = uniqueName("blocked-tx");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 60,
      partitions: 1,
      seed: 42,
      duplicateRate: 0.1,
    });
    const cli = start(topic, group, `in-apply=block:${BLOCK_MS}@3`);
    const port = await cli.metricsPort();
    await cli.waitForStderr(`failpoint in-apply: block ${BLOCK_MS}ms`);
    await waitForCaughtUp(stack.admin, group, topic);

    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
    // Evicted and rejoined: a second join, the stale commit refused, the batch re-read and skipped by offset.
    expect(await scrapeMetric(port, "replayable_rebalances_total")).toBeGreaterThanOrEqual(2);
    const skipped = await scrapeMetric(port, "replayable_offset_commits_total", {
      result: "skipped_rebalanced",
    });
    expect(skipped).toBeGreaterThanOrEqual(1);
    const reread = await scrapeMetric(port, "replayable_duplicates_total", { key: "offset" });
    expect(reread).toBeGreaterThanOrEqual(1);
    // No endless redelivery: at most what was fetched while the member was out of the group.
    expect(reread).toBeLessThanOrEqual(60);
    expect(cli.child.exitCode).toBeNull();
  });
});
