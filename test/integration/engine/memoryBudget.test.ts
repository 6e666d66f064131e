/**
 * The memory budget (REPLAYABLE_MEMORY_BUDGET_BYTES, src/engine/memoryPlan.ts) on real Kafka and
 * PostgreSQL: the fetch size per partition follows the assignment (a second member joins, each
 * member holds half the partitions, its fetch size doubles), and a record larger than the planned
 * fetch size is still consumed, because the broker returns the first record batch of a fetch whole
 * (KIP-74).
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { planMemory } from "../../../src/engine/memoryPlan.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { metricOf } from "../../helpers/inProcess.js";
import {
  BROKERS,
  TEST_CLIENT_ENV,
  testKafka,
  uniqueName,
  useStack,
  waitFor,
  waitForCaughtUp,
} from "../../helpers/stack.js";

const stack = useStack();
const BUDGET = 8 * 1_048_576;
const VALUE_BYTES = 1000;

/** Stores each record's offset, partition and value length in `public.seen`. */
const recording: Projection<number> = {
  name: "recording",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: ["public.seen"],
  decode: (record) => record.value?.length ?? 0,
  async apply({ client }, { record, value }) {
    await client.query("INSERT INTO public.seen (p, o, bytes) VALUES ($1, $2, $3)", [
      record.partition,
      record.offset,
      value,
    ]);
  },
};

async function startMember(
  topic: string,
  group: string,
  env: Record<string, string>,
): Promise<ConsumerService> {
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_PROJECTION: recording.name,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      ...env,
    }),
    projection: recording,
    log: createLogger("silent"),
    http: false,
  });
  onTestFinished(() => service.stop());
  await service.start();
  return service;
}

const gauge = (service: ConsumerService, name: string) => metricOf(service.metrics, name);

/** The plan for `partitions` of records of VALUE_BYTES (no key, no headers). */
function plan(partitions: number) {
  return planMemory({
    budgetBytes: BUDGET,
    assignedPartitions: partitions,
    prefetch: true,
    concurrently: 8,
    observed: { bytesPerRecord: VALUE_BYTES, msPerRecord: undefined },
    caps: {},
  });
}

/** The fetch size the planner gives `partitions` of records of VALUE_BYTES. */
const planned = (partitions: number): number => plan(partitions).fetchBytesPerPartition;

/** `count` records of VALUE_BYTES bytes spread over `partitions` partitions. */
const records = (count: number, partitions: number) =>
  Array.from({ length: count }, (_, i) => ({
    key: null,
    value: String(i % 10).repeat(VALUE_BYTES),
    partition: i % partitions,
  }));

async function seenCount(): Promise<number> {
  const r = await stack.db.pool.query<{ n: string }>("SELECT count(*) AS n FROM public.seen");
  return Number(r.rows[0]!.n);
}

describe("the memory budget", () => {
  it("shares the budget by the partitions assigned: a second member joins, each member's fetch size per partition doubles", async () => {
    const topic = uniqueName("budget");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 6);
    await stack.db.pool.query("CREATE TABLE public.seen (p int, o bigint, bytes int, PRIMARY KEY (p, o))");
    const env = { REPLAYABLE_MEMORY_BUDGET_BYTES: String(BUDGET) };
    const a = await startMember(topic, group, env);
    await produceRecords(testKafka(), topic, records(600, 6));
    await waitForCaughtUp(stack.admin, group, topic);
    expect(await gauge(a, "replayable_assigned_partitions")).toBe(6);
    const alone = await waitFor("A's plan for the records seen", async () => {
      const value = await gauge(a, "replayable_fetch_bytes_per_partition");
      return value === planned(6) ? value : undefined;
    });
    // The response limit covers the larger fetch size of a partition replayed undecoded (patch 009).
    expect(alone).toBeLessThan(plan(6).replayFetchBytesPerPartition);
    expect(await gauge(a, "replayable_fetch_max_bytes")).toBe(6 * plan(6).replayFetchBytesPerPartition);

    const b = await startMember(topic, group, env);
    await waitFor("both members to hold 3 partitions", async () =>
      (await gauge(a, "replayable_assigned_partitions")) === 3 &&
      (await gauge(b, "replayable_assigned_partitions")) === 3
        ? true
        : undefined,
    );
    // B learns the records' size from records of its own.
    await produceRecords(testKafka(), topic, records(600, 6));
    await waitForCaughtUp(stack.admin, group, topic);
    for (const member of [a, b]) {
      const shared = await waitFor("the plan for 3 partitions", async () => {
        const value = await gauge(member, "replayable_fetch_bytes_per_partition");
        return value === planned(3) ? value : undefined;
      });
      expect(Math.abs(shared - 2 * alone)).toBeLessThanOrEqual(1024);
      expect(await gauge(member, "replayable_fetch_max_bytes")).toBe(
        3 * plan(3).replayFetchBytesPerPartition,
      );
    }
    expect(await seenCount()).toBe(1200);
  });

  it("consumes a record larger than the planned fetch size (KIP-74: the first batch of a fetch comes whole)", async () => {
    const topic = uniqueName("budget-large");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 1);
    await stack.db.pool.query("CREATE TABLE public.seen (p int, o bigint, bytes int, PRIMARY KEY (p, o))");
    const fetchBytes = 16_384;
    const large = 200 * 1024;
    const small = (from: number) =>
      Array.from({ length: 10 }, (_, i) => ({ key: null, value: `small-${from + i}`, partition: 0 }));
    const kafka = testKafka();
    await produceRecords(kafka, topic, small(0));
    await produceRecords(kafka, topic, [{ key: null, value: "L".repeat(large), partition: 0 }]);
    await produceRecords(kafka, topic, small(11));
    // REPLAYABLE_MAX_BATCH_BYTES set: a cap of the planned fetch size, far below the large record.
    const member = await startMember(topic, group, {
      REPLAYABLE_MEMORY_BUDGET_BYTES: String(BUDGET),
      REPLAYABLE_MAX_BATCH_BYTES: String(fetchBytes),
    });
    await waitForCaughtUp(stack.admin, group, topic);
    expect(await gauge(member, "replayable_fetch_bytes_per_partition")).toBe(fetchBytes);
    const rows = await stack.db.pool.query<{ o: string; bytes: number }>(
      "SELECT o, bytes FROM public.seen ORDER BY o",
    );
    expect(rows.rows.map((r) => r.o)).toEqual(Array.from({ length: 21 }, (_, i) => String(i)));
    expect(rows.rows[10]!.bytes).toBe(large);
    expect(await gauge(member, "replayable_records_dead_lettered_total")).toBe(0);
  });
});
