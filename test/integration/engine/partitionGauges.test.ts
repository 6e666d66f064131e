/**
 * The per-partition gauges (lag, checkpoint, commit gap, assigned partitions) follow Kafka and
 * PostgreSQL, not only the batches: they show the lag before any batch has committed, and a
 * stopped member reports no partitions.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { produceLedger } from "../../helpers/ledger.js";
import { scrapeMetric, startCli } from "../../helpers/process.js";
import {
  BROKERS,
  TEST_CLIENT_ENV,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
  useStack,
} from "../../helpers/stack.js";

const stack = useStack();

describe("partition gauges", () => {
  it("show the lag from the high watermark while the first transaction is still running", async () => {
    const topic = uniqueName("lag");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 50, partitions: 1, seed: 61 });
    const run = startCli(
      ["run", "--projection", "ledger", "--topic", topic, "--group", group, "--database-url", stack.db.url],
      { REPLAYABLE_FAILPOINTS: "in-apply=sleep:6000@1", REPLAYABLE_LAG_REFRESH_MS: "200" },
    );
    onTestFinished(() => run.kill());
    const port = await run.metricsPort();
    await run.waitForStderr("failpoint in-apply: sleep");
    // No batch has committed yet: the lag comes from Kafka (high watermark 50, no committed offset, log start 0).
    await waitFor("the lag gauge to show 50 records", async () =>
      (await scrapeMetric(port, "replayable_consumer_lag_records", { topic, partition: "0" })) === 50
        ? true
        : undefined,
    );
    expect(await scrapeMetric(port, "replayable_records_applied_total", { topic })).toBe(0);
    expect(await scrapeMetric(port, "replayable_assigned_partitions")).toBe(1);

    await waitForCaughtUp(stack.admin, group, topic);
    await waitFor("lag 0, checkpoint 50, no gap", async () => {
      const labels = { topic, partition: "0" };
      const lag = await scrapeMetric(port, "replayable_consumer_lag_records", labels);
      const checkpoint = await scrapeMetric(port, "replayable_checkpoint_offset", labels);
      const gap = await scrapeMetric(port, "replayable_checkpoint_commit_gap_records", labels);
      return lag === 0 && checkpoint === 50 && gap === 0 ? true : undefined;
    });
    run.child.kill("SIGTERM");
    expect(await run.exited).toEqual({ code: 0, signal: null });
  });

  it("regression: the lag follows Kafka while the member's pool has no connection for the checkpoint read (break-it review)", async () => {
    // The refresh read Kafka, then waited for a pooled connection (held by a stuck transaction,
    // up to the pool's 10 s connection timeout) before it set any gauge: the lag stood still
    // during the database outage an operator watches it for.
    const topic = uniqueName("lag-pool");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 50, partitions: 1, seed: 63 });
    const run = startCli(
      ["run", "--projection", "ledger", "--topic", topic, "--group", group, "--database-url", stack.db.url],
      {
        REPLAYABLE_FAILPOINTS: "in-apply=sleep:60000@1",
        REPLAYABLE_LAG_REFRESH_MS: "200",
        REPLAYABLE_DB_POOL_SIZE: "1",
        REPLAYABLE_PARTITIONS_CONCURRENTLY: "1",
        LOG_FORMAT: "json",
      },
    );
    onTestFinished(() => run.kill());
    const port = await run.metricsPort();
    await run.waitForStderr("failpoint in-apply: sleep");
    const later = generateLedgerStream({ count: 30, duplicateRate: 0, seed: 64, idPrefix: "later" });
    await produceRecords(testKafka(), topic, later.records);
    await waitFor("the lag gauge to show the 30 records produced since", async () =>
      (await scrapeMetric(port, "replayable_consumer_lag_records", { topic, partition: "0" })) === 80
        ? true
        : undefined,
    );
    // Before the checkpoint read gave up on the pool: the lag did not wait for it.
    expect(run.stderr()).not.toContain("lag refresh failed");
  });

  it("a stopped member reports 0 assigned partitions and no per-partition rows", async () => {
    const topic = uniqueName("stop");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 20, partitions: 2, seed: 62 });
    const config = loadConfig(
      { ...TEST_CLIENT_ENV },
      {
        KAFKA_BROKERS: BROKERS.join(","),
        DATABASE_URL: stack.db.url,
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
        REPLAYABLE_LAG_REFRESH_MS: "200",
      },
    );
    const service = new ConsumerService({
      config,
      projection: ledgerProjection,
      log: createLogger("warn"),
      http: false,
    });
    onTestFinished(() => service.stop());
    await service.start();
    await waitForCaughtUp(stack.admin, group, topic);
    const { metrics } = service;
    await waitFor("a lag row per partition", async () =>
      (await metrics.lag.get()).values.length === 2 ? true : undefined,
    );
    expect((await metrics.assignedPartitions.get()).values.map((v) => v.value)).toEqual([2]);

    await service.stop();
    expect(await service.done).toEqual({ kind: "stopped" });
    expect((await metrics.assignedPartitions.get()).values.map((v) => v.value)).toEqual([0]);
    expect((await metrics.lag.get()).values).toEqual([]);
    expect((await metrics.checkpoint.get()).values).toEqual([]);
    expect((await metrics.checkpointCommitGap.get()).values).toEqual([]);
    // Counters keep their totals.
    expect((await metrics.applied.get()).values.map((v) => v.value)).toEqual([20]);
  });
});
