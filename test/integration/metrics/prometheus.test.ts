/**
 * Metrics as operators read them: `/metrics` of a running `replayable run` passes
 * `promtool check metrics`, a real Prometheus server scrapes it, and after a run plus a replay
 * the counters agree with the database (applied = rows the projection applied, duplicates =
 * records re-read).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createMetrics } from "../../../src/metrics/metrics.js";
import { offsetGaugeValue } from "../../../src/offsets.js";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { scrapeMetric, startCli, sumMetric, type CliProcess } from "../../helpers/process.js";
import { promtoolCheckMetrics, startPrometheus } from "../../helpers/prometheus.js";
import { testKafka, uniqueName, waitFor, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const stack = useStack();

/** Fast gauge refreshes, so idle lag and checkpoints show within a second. */
const FAST_GAUGES = { REPLAYABLE_LAG_REFRESH_MS: "300" };

function startRun(topic: string, group: string): CliProcess {
  const run = startCli(
    ["run", "--projection", "ledger", "--topic", topic, "--group", group, "--database-url", stack.db.url],
    FAST_GAUGES,
  );
  onTestFinished(() => run.kill());
  return run;
}

async function stopRun(run: CliProcess): Promise<void> {
  run.child.kill("SIGTERM");
  expect(await run.exited).toEqual({ code: 0, signal: null });
}

async function metricsText(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** The metric names our registry defines (process metrics included), as in docs/metrics.md. */
async function definedMetricNames(): Promise<string[]> {
  const metrics = createMetrics();
  return (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
}

describe("Prometheus metrics", () => {
  it("/metrics passes promtool check metrics, and a real Prometheus server reads the duplicate counter", async () => {
    const topic = uniqueName("prom");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 200,
      partitions: 2,
      seed: 31,
      duplicateRate: 0.2,
    });
    // One record whose value is not JSON: dead-lettered, so the dead-letter counter has a sample.
    await produceRecords(testKafka(), topic, [
      {
        key: "acct-x",
        value: "not json",
        partition: 0,
        headers: {
          ce_specversion: "1.0",
          ce_id: "not-json-1",
          ce_source: "test",
          ce_type: "ledger.account.credited",
        },
      },
    ]);
    expect(stream.duplicates).toBeGreaterThan(0);

    const run = startRun(topic, group);
    const port = await run.metricsPort();
    await waitForCaughtUp(stack.admin, group, topic);
    // The lag gauges are refreshed while idle: both partitions show 0.
    await waitFor("lag 0 on both partitions", async () => {
      const text = await metricsText(port);
      const rows = text
        .split("\n")
        .filter((l) => l.startsWith(`replayable_consumer_lag_records{topic="${topic}"`));
      return rows.length === 2 && sumMetric(text, "replayable_consumer_lag_records", { topic }) === 0
        ? true
        : undefined;
    });

    const text = await metricsText(port);
    for (const name of await definedMetricNames()) expect(text).toContain(`# TYPE ${name} `);
    expect(promtoolCheckMetrics(text)).toEqual({ code: 0, output: "" });

    const prometheus = await startPrometheus([`127.0.0.1:${port}`]);
    onTestFinished(() => prometheus.stop());
    const duplicates = await waitFor(
      "Prometheus to scrape the duplicate counter",
      async () => {
        const [value] = await prometheus.query(
          `sum(replayable_duplicates_total{job="replayable",topic="${topic}"})`,
        );
        return value === stream.duplicates ? value : undefined;
      },
      60_000,
      500,
    );
    expect(duplicates).toBe(stream.duplicates);
    expect(
      await prometheus.query(`sum(replayable_duplicates_total{topic="${topic}",key="event_id"})`),
    ).toEqual([stream.duplicates]);
    expect(
      await prometheus.query(
        `sum(replayable_records_dead_lettered_total{topic="${topic}",code="DECODE_FAILED"})`,
      ),
    ).toEqual([1]);
    expect(await prometheus.query(`sum(replayable_records_applied_total{topic="${topic}"})`)).toEqual([
      stream.events,
    ]);
    expect(await prometheus.query(`replayable_assigned_partitions`)).toEqual([2]);

    // Every query of the Grafana dashboard is valid PromQL for this Prometheus, with Grafana's variables filled in.
    const dashboard = JSON.parse(readFileSync("deploy/grafana/dashboards/replayable.json", "utf8")) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        const expr = target.expr
          .replaceAll("$__rate_interval", "30s")
          .replaceAll("$__range", "5m")
          .replaceAll("$topic", topic);
        await expect(prometheus.query(expr), panel.title).resolves.toBeInstanceOf(Array);
      }
    }
    expect(
      await prometheus.query(
        `max by (topic, partition) (replayable_consumer_lag_records{topic=~"${topic}"})`,
      ),
    ).toEqual([0, 0]);
    await stopRun(run);
  });

  it("after a run and a replay from the earliest offset, the counters agree with the database", async () => {
    const topic = uniqueName("replay");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 150,
      partitions: 2,
      seed: 32,
      duplicateRate: 0.1,
    });

    const first = startRun(topic, group);
    const port = await first.metricsPort();
    await waitForCaughtUp(stack.admin, group, topic);
    const rows = await eventIdCount(stack.db.pool);
    expect(rows).toBe(stream.events);
    expect(await scrapeMetric(port, "replayable_records_applied_total", { topic })).toBe(rows);
    expect(await scrapeMetric(port, "replayable_duplicates_total", { topic })).toBe(stream.duplicates);
    expect(await scrapeMetric(port, "replayable_event_ids", { projection: "ledger" })).toBe(rows);
    await stopRun(first);
    const checksum = await ledgerChecksumOf(stack.db.pool);
    expect(checksum).toBe(stream.checksum);

    // Replay: the group is inactive; reset its offsets to the earliest, as `--reset-offsets --to-earliest` does.
    await waitFor("the group to have no members", async () =>
      (await stack.admin.describeGroup(group)).members.length === 0 ? true : undefined,
    );
    const ends = await stack.admin.topicOffsets(topic);
    await stack.admin.setOffsets(
      group,
      topic,
      ends.map((e) => ({ partition: e.partition, offset: e.logStartOffset })),
    );

    const second = startRun(topic, group);
    const port2 = await second.metricsPort();
    await waitForCaughtUp(stack.admin, group, topic);
    // Every record was re-read and counted as a duplicate (below the checkpoint: key "offset"); nothing applied.
    expect(await scrapeMetric(port2, "replayable_duplicates_total", { topic })).toBe(stream.records.length);
    expect(await scrapeMetric(port2, "replayable_duplicates_total", { topic, key: "offset" })).toBe(
      stream.records.length,
    );
    expect(await scrapeMetric(port2, "replayable_records_applied_total", { topic })).toBe(0);
    expect(await eventIdCount(stack.db.pool)).toBe(rows);
    expect(await scrapeMetric(port2, "replayable_event_ids", { projection: "ledger" })).toBe(rows);
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(checksum);
    // Caught up again: the checkpoint gauges equal the database's checkpoints, and no gap is left.
    const checkpoints = await stack.db.pool.query<{ partition: number; next_offset: string }>(
      "SELECT partition, next_offset FROM replayable.checkpoints WHERE topic = $1",
      [topic],
    );
    await waitFor("the checkpoint gauges to match the database and the gap to close", async () => {
      const text = await metricsText(port2);
      const matches = checkpoints.rows.every(
        (r) =>
          sumMetric(text, "replayable_checkpoint_offset", { topic, partition: String(r.partition) }) ===
          offsetGaugeValue(r.next_offset),
      );
      return matches && sumMetric(text, "replayable_checkpoint_commit_gap_records", { topic }) === 0
        ? true
        : undefined;
    });
    await stopRun(second);
  });
});
