/**
 * A failure that is not the record's fault is never dead-lettered: the partition is retried with
 * back-off and then paused, while the other partitions keep going, until the cause is fixed.
 */
import { expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { metricOf } from "../../helpers/inProcess.js";
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

/** Writes each record to table `public.p<partition>`: until p0 exists, partition 0 fails with 42P01. */
const perPartitionTable: Projection<string> = {
  name: "per_partition",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: [],
  decode: (record) => record.value?.toString("utf8") ?? "",
  async apply({ client }, { record, value }) {
    await client.query(`INSERT INTO public.p${record.partition} VALUES ($1, $2)`, [record.offset, value]);
  },
};

async function rows(table: string): Promise<number> {
  const r = await stack.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(r.rows[0]!.n);
}

it("a missing table (42P01) pauses its partition without dead letters; the others finish; fixing it resumes", async () => {
  const topic = uniqueName("fault");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 3);
  await stack.db.pool.query(
    "CREATE TABLE public.p1 (o bigint, v text); CREATE TABLE public.p2 (o bigint, v text)",
  );
  await produceRecords(
    testKafka(),
    topic,
    Array.from({ length: 30 }, (_, i) => ({ key: null, value: `v${i}`, partition: i % 3 })),
  );
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_PROJECTION: "per_partition",
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      REPLAYABLE_RETRY_INITIAL_MS: "50",
      REPLAYABLE_RETRY_MAX_MS: "500",
    }),
    projection: perPartitionTable,
    log: createLogger("silent"),
    http: false,
  });
  onTestFinished(() => service.stop());
  await service.start();

  // Partitions 1 and 2 finish while partition 0 fails, pauses and retries.
  await waitFor("partitions 1 and 2 applied", async () =>
    (await rows("public.p1")) === 10 && (await rows("public.p2")) === 10 ? true : undefined,
  );
  await waitFor("partition 0 paused", async () =>
    (await metricOf(service.metrics, "replayable_paused_partitions")) === 1 ? true : undefined,
  );
  expect(
    await metricOf(service.metrics, "replayable_transaction_retries_total", { reason: "other" }),
  ).toBeGreaterThanOrEqual(3);
  const letters = await stack.db.pool.query("SELECT 1 FROM replayable.dead_letters");
  expect(letters.rowCount).toBe(0);

  await stack.db.pool.query("CREATE TABLE public.p0 (o bigint, v text)");
  await waitForCaughtUp(stack.admin, group, topic);
  expect(await rows("public.p0")).toBe(10);
  expect(await metricOf(service.metrics, "replayable_records_applied_total")).toBe(30);
  expect(await metricOf(service.metrics, "replayable_paused_partitions")).toBe(0);
  await service.stop();
  expect(await service.done).toEqual({ kind: "stopped" });
});
