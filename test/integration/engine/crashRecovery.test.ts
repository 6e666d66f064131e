/**
 * Crash tests against real Kafka and PostgreSQL: the consumer is a subprocess killed with SIGKILL
 * at a fail point, then restarted; the ledger must be exact and duplicates counted as docs/design.md says.
 */
import { describe, expect, it } from "vitest";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { scrapeMetric, startCli } from "../../helpers/process.js";
import { uniqueName, waitFor, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const stack = useStack();

/** A short session timeout, so a member killed with SIGKILL leaves the group quickly (broker minimum 6 s). */
const FAST_REJOIN = { REPLAYABLE_SESSION_TIMEOUT_MS: "6000", REPLAYABLE_HEARTBEAT_INTERVAL_MS: "1000" };

function runArgs(topic: string, group: string): string[] {
  return [
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
  ];
}

async function checkpointSum(topic: string): Promise<bigint> {
  const r = await stack.db.pool.query<{ s: string | null }>(
    "SELECT sum(next_offset)::text AS s FROM replayable.checkpoints WHERE topic = $1",
    [topic],
  );
  return BigInt(r.rows[0]?.s ?? "0");
}

describe("crash recovery", () => {
  it("kill -9 after the database COMMIT and before the offset commit: applied once, one duplicate counted", async () => {
    const topic = uniqueName("crash-after-commit");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, { count: 40, partitions: 1, seed: 11 });

    const crashing = startCli(runArgs(topic, group), {
      ...FAST_REJOIN,
      REPLAYABLE_MAX_BATCH_RECORDS: "1",
      REPLAYABLE_FAILPOINTS: "after-db-commit=kill@1",
    });
    const crashed = await crashing.exited;
    expect(crashed.signal).toBe("SIGKILL");
    // The first record's transaction committed; its offset was never committed to Kafka.
    expect(await checkpointSum(topic)).toBe(1n);
    expect(await stack.admin.committedOffsets(group, [topic])).toEqual([
      { topic, partition: 0, offset: "-1" },
    ]);

    const restarted = startCli(runArgs(topic, group));
    try {
      const port = await restarted.metricsPort();
      await waitForCaughtUp(stack.admin, group, topic);
      expect(await scrapeMetric(port, "replayable_duplicates_total", { topic })).toBe(1);
      expect(await scrapeMetric(port, "replayable_records_applied_total", { topic })).toBe(39);
      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    } finally {
      restarted.child.kill("SIGTERM");
      await restarted.exited;
    }
  });

  it("a transaction that dies before COMMIT commits no offset; after restart: applied once, no duplicate", async () => {
    const topic = uniqueName("crash-before-commit");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, { count: 30, partitions: 1, seed: 12 });

    const crashing = startCli(runArgs(topic, group), {
      ...FAST_REJOIN,
      REPLAYABLE_FAILPOINTS: "before-db-commit=kill@1",
    });
    expect((await crashing.exited).signal).toBe("SIGKILL");
    expect(await checkpointSum(topic)).toBe(0n);
    expect(await stack.admin.committedOffsets(group, [topic])).toEqual([
      { topic, partition: 0, offset: "-1" },
    ]);

    const restarted = startCli(runArgs(topic, group));
    try {
      const port = await restarted.metricsPort();
      await waitForCaughtUp(stack.admin, group, topic);
      expect(await scrapeMetric(port, "replayable_duplicates_total")).toBe(0);
      expect(await scrapeMetric(port, "replayable_records_applied_total")).toBe(30);
      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    } finally {
      restarted.child.kill("SIGTERM");
      await restarted.exited;
    }
  });

  it("SIGTERM in the middle of a batch exits 0 within the shutdown timeout; nothing applied twice after restart", async () => {
    const topic = uniqueName("sigterm");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 60,
      partitions: 2,
      seed: 13,
      duplicateRate: 0.1,
    });

    const slow = startCli(runArgs(topic, group), {
      REPLAYABLE_FAILPOINTS: "in-apply=sleep:3000@1",
      REPLAYABLE_SHUTDOWN_TIMEOUT_MS: "20000",
    });
    await slow.waitForStderr("failpoint in-apply: sleep");
    const signalledAt = Date.now();
    slow.child.kill("SIGTERM");
    const result = await slow.exited;
    expect(result).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(20_000);
    // The in-flight transaction finished and its offset was committed: no gap to re-read.
    const committed = await stack.admin.committedOffsets(group, [topic]);
    const checkpoints = await stack.db.pool.query<{ partition: number; next_offset: string }>(
      "SELECT partition, next_offset FROM replayable.checkpoints WHERE topic = $1",
      [topic],
    );
    for (const row of checkpoints.rows) {
      expect(committed.find((c) => c.partition === row.partition)?.offset).toBe(row.next_offset);
    }

    const restarted = startCli(runArgs(topic, group));
    try {
      const port = await restarted.metricsPort();
      await waitForCaughtUp(stack.admin, group, topic);
      expect(await scrapeMetric(port, "replayable_duplicates_total", { key: "offset" })).toBe(0);
      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
      expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
    } finally {
      restarted.child.kill("SIGTERM");
      await restarted.exited;
    }
  });

  it("clean stop and restart: the committed offset is last offset + 1 and nothing is redelivered", async () => {
    const topic = uniqueName("clean-stop");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 25, partitions: 1, seed: 14 });
    const first = startCli(runArgs(topic, group));
    await waitForCaughtUp(stack.admin, group, topic);
    first.child.kill("SIGTERM");
    expect((await first.exited).code).toBe(0);
    expect(await stack.admin.committedOffsets(group, [topic])).toEqual([
      { topic, partition: 0, offset: "25" },
    ]);

    const second = startCli(runArgs(topic, group));
    try {
      const port = await second.metricsPort();
      await produceLedger(stack.admin, topic, { count: 1, partitions: 1, seed: 99, idPrefix: "late-" });
      await waitFor("the late record to be applied", async () =>
        (await scrapeMetric(port, "replayable_records_applied_total")) === 1 ? true : undefined,
      );
      expect(await scrapeMetric(port, "replayable_duplicates_total")).toBe(0);
      expect(await stack.admin.committedOffsets(group, [topic])).toEqual([
        { topic, partition: 0, offset: "26" },
      ]);
    } finally {
      second.child.kill("SIGTERM");
      await second.exited;
    }
  });
});
