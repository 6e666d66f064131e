/**
 * Scale-out: a second member joins mid-stream and later leaves. Kafka moves partitions between
 * the two processes (rebalances); the checkpoint row lock and the commit-only-if-still-owned rule
 * keep every effect applied once.
 */
import { describe, expect, it } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { eventIdCount, ledgerChecksumOf } from "../../helpers/ledger.js";
import { scrapeMetric, startCli, type CliProcess } from "../../helpers/process.js";
import { testKafka, uniqueName, waitFor, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const stack = useStack();

describe("consumer group membership", () => {
  it("a second member joins mid-stream and later leaves: balances exact, nothing applied twice", async () => {
    const topic = uniqueName("members");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 4);
    const stream = generateLedgerStream({ count: 1600, duplicateRate: 0.05, seed: 31 });
    const slice = (i: number) => stream.records.slice(i * 400, (i + 1) * 400);
    const args = [
      "run",
      "--projection",
      "ledger",
      "--topic",
      topic,
      "--group",
      group,
      "--database-url",
      stack.db.url,
    ];
    const env = { REPLAYABLE_MAX_BATCH_RECORDS: "25" };
    const members: CliProcess[] = [];
    try {
      const a = startCli(args, env);
      members.push(a);
      const aPort = await a.metricsPort();
      await produceRecords(testKafka(), topic, slice(0));
      await waitFor("member A to apply records", async () =>
        (await scrapeMetric(aPort, "replayable_records_applied_total")) > 0 ? true : undefined,
      );

      const b = startCli(args, env);
      members.push(b);
      const bPort = await b.metricsPort();
      await produceRecords(testKafka(), topic, slice(1));
      // B has joined once the group rebalanced and it owns partitions.
      await waitFor("member B to be assigned partitions", async () =>
        (await scrapeMetric(bPort, "replayable_assigned_partitions")) > 0 ? true : undefined,
      );
      await produceRecords(testKafka(), topic, slice(2));
      await waitFor("member B to apply records", async () =>
        (await scrapeMetric(bPort, "replayable_records_applied_total")) > 0 ? true : undefined,
      );

      b.child.kill("SIGTERM");
      expect((await b.exited).code).toBe(0);
      await produceRecords(testKafka(), topic, slice(3));
      await waitForCaughtUp(stack.admin, group, topic);

      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
      expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
      expect(await scrapeMetric(aPort, "replayable_rebalances_total")).toBeGreaterThanOrEqual(3);
    } finally {
      for (const m of members) m.child.kill("SIGTERM");
      await Promise.all(members.map((m) => m.exited));
    }
  });
});
