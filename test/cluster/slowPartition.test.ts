/**
 * Regression (issue "Effectively once on a real cluster", fix 8): one slow or failing partition
 * stalled every partition. The handler waited for the partition's previous batch and slept its
 * retry back-off inside KafkaJS's eachBatch, and KafkaJS fetches again only when every batch of
 * the previous fetch is handled: a lock wait or an outage on one partition stopped every other
 * partition of that broker for 10 to 12 s at a time. Here partition 0's transactions wait on a
 * row lock for 15 s, then fail with 40001 for 20 s, while records keep arriving on every
 * partition: the other partitions keep committing (sampled every second), and the totals are exact.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it, onTestFinished } from "vitest";
import { Partitioners } from "kafkajs";
import { loadConfig } from "../../src/config.js";
import { ConsumerService } from "../../src/engine/consumerService.js";
import { createLogger } from "../../src/logger.js";
import type { Projection } from "../../src/projection.js";
import { metricOf } from "../helpers/inProcess.js";
import { BROKERS, testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../helpers/stack.js";
import { createReplicatedTopic } from "../helpers/cluster.js";

const stack = useStack();

const PARTITIONS = 4;
/** Records per partition per production tick; a tick every 250 ms for the whole test. */
const PER_TICK = 5;
/** Longest time a healthy partition may go without a new committed offset while it has records to read, ms. */
const MAX_STANDSTILL_MS = 4000;

/**
 * Writes each record to public.applied; partition 0 first takes a share lock on the gate row
 * (blocked while the test holds it FOR UPDATE) and fails with 40001 while the gate says so.
 */
const gated: Projection<string> = {
  name: "gated",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: [],
  decode: (record) => record.value?.toString("utf8") ?? "",
  async apply({ client }, { record, value }) {
    if (record.partition === 0) {
      const gate = await client.query<{ failing: boolean }>(
        "SELECT failing FROM public.gate WHERE id = 1 FOR SHARE",
      );
      if (gate.rows[0]!.failing)
        await client.query(
          "DO $$ BEGIN RAISE EXCEPTION 'gate closed' USING ERRCODE = 'serialization_failure'; END $$",
        );
    }
    await client.query("INSERT INTO public.applied (p, o, v) VALUES ($1, $2, $3)", [
      record.partition,
      record.offset,
      value,
    ]);
  },
};

describe("one slow or failing partition beside healthy ones", () => {
  it("a partition blocked on a row lock, then failing with 40001, never stops the others from committing", async () => {
    const topic = uniqueName("slow-part");
    const group = uniqueName("g");
    await createReplicatedTopic(topic, PARTITIONS);
    await stack.db.pool.query(`
      CREATE TABLE public.applied (p int, o bigint, v text, PRIMARY KEY (p, o));
      CREATE TABLE public.gate (id int PRIMARY KEY, failing boolean NOT NULL);
      INSERT INTO public.gate VALUES (1, false);`);

    const service = new ConsumerService({
      config: loadConfig({
        KAFKA_BROKERS: BROKERS.join(","),
        DATABASE_URL: stack.db.url,
        REPLAYABLE_PROJECTION: "gated",
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
        REPLAYABLE_RETRY_INITIAL_MS: "100",
        REPLAYABLE_RETRY_MAX_MS: "2000",
        REPLAYABLE_SESSION_TIMEOUT_MS: "10000",
      }),
      projection: gated,
      log: createLogger("silent"),
      http: false,
    });
    onTestFinished(() => service.stop());

    // Records keep arriving on every partition for the whole test.
    const producer = testKafka().producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    onTestFinished(() => producer.disconnect());
    let produced = 0;
    let producing = true;
    const production = (async () => {
      for (let tick = 0; producing; tick++) {
        const messages = [];
        for (let p = 0; p < PARTITIONS; p++)
          for (let i = 0; i < PER_TICK; i++) messages.push({ partition: p, value: `t${tick}-${i}` });
        await producer.send({ topic, acks: -1, messages });
        produced += messages.length;
        await sleep(250); // the production rate, not a synchronisation
      }
    })();

    // Every second: the committed offsets of the healthy partitions and their high watermarks.
    const lastMove = new Map<number, { offset: string; at: number }>();
    let worstStandstillMs = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const now = Date.now();
        const committed = await stack.admin.committedOffsets(group, [topic]);
        for (let p = 1; p < PARTITIONS; p++) {
          const offset = committed.find((c) => c.partition === p)?.offset ?? "-1";
          const previous = lastMove.get(p);
          if (previous === undefined || previous.offset !== offset) lastMove.set(p, { offset, at: now });
          else worstStandstillMs = Math.max(worstStandstillMs, now - previous.at);
        }
        await sleep(1000); // the sampling period, not a synchronisation
      }
    })();

    // Partition 0 blocks on the gate row while the test holds it FOR UPDATE.
    const blocker = await stack.db.pool.connect();
    await blocker.query("BEGIN");
    await blocker.query("SELECT * FROM public.gate WHERE id = 1 FOR UPDATE");
    await service.start();
    await waitFor("partition 0 waiting on the gate row lock", async () => {
      const r = await stack.db.pool.query(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      return (r.rowCount ?? 0) > 0 ? true : undefined;
    });
    lastMove.clear();
    worstStandstillMs = 0;
    const blockedSince = Date.now();
    await waitFor(
      "15 s of partition 0 blocked",
      () => (Date.now() - blockedSince >= 15_000 ? true : undefined),
      30_000,
    );

    // Then 20 s of serialization failures on partition 0.
    await blocker.query("UPDATE public.gate SET failing = true WHERE id = 1");
    await blocker.query("COMMIT");
    blocker.release();
    await waitFor("partition 0 failing with 40001", async () =>
      (await metricOf(service.metrics, "replayable_transaction_retries_total", {
        reason: "serialization_failure",
      })) > 0
        ? true
        : undefined,
    );
    const failingSince = Date.now();
    await waitFor(
      "20 s of partition 0 failing",
      () => (Date.now() - failingSince >= 20_000 ? true : undefined),
      40_000,
    );
    sampling = false;
    await sampler;
    expect(worstStandstillMs).toBeLessThanOrEqual(MAX_STANDSTILL_MS);
    // The healthy partitions kept up with production all along: each moved in the last seconds.
    for (let p = 1; p < PARTITIONS; p++) expect(lastMove.get(p)).toBeDefined();

    // Partition 0 recovers; every record is applied exactly once in the table.
    await stack.db.pool.query("UPDATE public.gate SET failing = false WHERE id = 1");
    producing = false;
    await production;
    await waitForCaughtUp(stack.admin, group, topic);
    const rows = await stack.db.pool.query<{ p: number; n: string }>(
      "SELECT p, count(*) AS n FROM public.applied GROUP BY p ORDER BY p",
    );
    expect(rows.rows.map((r) => Number(r.n)).reduce((a, b) => a + b, 0)).toBe(produced);
    expect(rows.rows.map((r) => Number(r.n))).toEqual(Array(PARTITIONS).fill(produced / PARTITIONS));
    expect(await metricOf(service.metrics, "replayable_records_applied_total")).toBe(produced);
    expect(await metricOf(service.metrics, "replayable_records_dead_lettered_total")).toBe(0);
    await service.stop();
    expect(await service.done).toEqual({ kind: "stopped" });
  });
});
