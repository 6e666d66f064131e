/**
 * The KafkaJS client's log lines in our logger: an ordinary rebalance (a second member joins, then
 * leaves) is expected group coordination, so it logs no error-level line. KafkaJS itself logs the
 * coordinator's REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID responses to
 * Heartbeat and OffsetCommit at error level; src/kafka/client.ts routes them to debug.
 */
import { describe, expect, it } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { scrapeMetric, startCli, type CliProcess } from "../../helpers/process.js";
import { testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

/** The JSON log lines of a process's stderr at pino level error (50) or above. */
function errorLines(stderr: string): string[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .filter((line) => ((JSON.parse(line) as { level?: number }).level ?? 0) >= 50);
}

describe("KafkaJS log lines", () => {
  it("an ordinary rebalance logs no error-level lines: a second member joins, then leaves", async () => {
    const topic = uniqueName("rebalance-logs");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 2);
    const stream = generateLedgerStream({ count: 600, duplicateRate: 0, seed: 71 });
    const args = ["run", "--projection", "ledger", "--topic", topic, "--group", group];
    // Heartbeats every second, so a member hears of the rebalance from a Heartbeat response.
    const env = {
      DATABASE_URL: stack.db.url,
      LOG_LEVEL: "info",
      REPLAYABLE_HEARTBEAT_INTERVAL_MS: "1000",
      REPLAYABLE_MAX_BATCH_RECORDS: "20",
    };
    const members: CliProcess[] = [];
    try {
      // Member A logs at debug, so the test sees the rebalance responses it was told about.
      const a = startCli(args, { ...env, LOG_LEVEL: "debug" });
      members.push(a);
      const aPort = await a.metricsPort();
      await produceRecords(testKafka(), topic, stream.records.slice(0, 200));
      await waitForCaughtUp(stack.admin, group, topic);

      const b = startCli(args, env);
      members.push(b);
      const bPort = await b.metricsPort();
      await waitFor("the group to rebalance onto both members", async () =>
        (await scrapeMetric(aPort, "replayable_assigned_partitions")) === 1 &&
        (await scrapeMetric(bPort, "replayable_assigned_partitions")) === 1
          ? true
          : undefined,
      );
      await produceRecords(testKafka(), topic, stream.records.slice(200, 400));
      await waitForCaughtUp(stack.admin, group, topic);

      b.child.kill("SIGTERM");
      expect((await b.exited).code).toBe(0);
      await waitFor("member A to take both partitions again", async () =>
        (await scrapeMetric(aPort, "replayable_assigned_partitions")) === 2 ? true : undefined,
      );
      await produceRecords(testKafka(), topic, stream.records.slice(400));
      await waitForCaughtUp(stack.admin, group, topic);
      expect(await scrapeMetric(aPort, "replayable_rebalances_total")).toBeGreaterThanOrEqual(3);

      a.child.kill("SIGTERM");
      expect((await a.exited).code).toBe(0);
      expect({ a: errorLines(a.stderr()), b: errorLines(b.stderr()) }).toEqual({ a: [], b: [] });
      const rebalanceResponses = a
        .stderr()
        .split("\n")
        .filter((line) => line.includes('"error":"The group is rebalancing, so a rejoin is needed"'))
        .map((line) => JSON.parse(line) as { level: number; namespace: string; msg: string })
        .filter((l) => l.namespace === "Connection" && l.msg.startsWith("Response "));
      expect(rebalanceResponses.length).toBeGreaterThan(0);
      expect(rebalanceResponses.map((l) => l.level)).toEqual(rebalanceResponses.map(() => 20));
    } finally {
      for (const m of members) m.kill();
      await Promise.all(members.map((m) => m.exited));
    }
  });
});
