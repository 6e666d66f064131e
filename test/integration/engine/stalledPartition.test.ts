/**
 * Progress detection (issue 11, case 9, second half): a partition that makes no progress while
 * it has lag is reported, whatever holds it (here a projection that fails on partition 0 until a
 * table exists; the compaction case is fixed by a KafkaJS patch, so it can no longer serve): one
 * warning per stall naming the partition with its committed offset and high watermark,
 * `replayable_partition_stalled`, and /readyz not ready after REPLAYABLE_STALL_TIMEOUT_MS; ready
 * again once the partition moves.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { produceRecords } from "../../../src/kafka/producer.js";
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

/** A pino logger whose JSON lines are kept in `lines`. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim() !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { log: pino({ level: "info" }, stream), lines };
}

async function readyz(port: number): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: response.status, body: await response.text() };
}

it("reports a partition with lag and no progress (warning, gauge, /readyz) and clears it when it moves", async () => {
  const topic = uniqueName("stall");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 2);
  await stack.db.pool.query("CREATE TABLE public.p1 (o bigint, v text)");
  await produceRecords(
    testKafka(),
    topic,
    Array.from({ length: 20 }, (_, i) => ({ key: null, value: `v${i}`, partition: i % 2 })),
  );
  const { log, lines } = capturingLogger();
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
      REPLAYABLE_LAG_REFRESH_MS: "200",
      REPLAYABLE_STALL_TIMEOUT_MS: "2000",
      REPLAYABLE_METRICS_PORT: "0",
    }),
    projection: perPartitionTable,
    log,
  });
  onTestFinished(() => service.stop());
  await service.start();
  const port = service.httpPort!;
  const stalled = { topic, partition: "0" };
  const warnings = () =>
    lines.filter((l) => l.msg === "partition makes no progress while it has lag" && l.partition === 0);

  // Partition 1 finishes; partition 0 keeps failing and is reported once the bound has passed.
  await waitForCaughtUpOn(1);
  const notReady = await waitFor("/readyz to answer 503 for no progress", async () => {
    const answer = await readyz(port);
    return answer.status === 503 && answer.body.includes("no progress") ? answer : undefined;
  });
  expect(notReady.body).toBe(
    `not ready: no progress for at least 2000 ms while records wait on ${topic}/0 (committed offset none, high watermark 10, lag 10)\n`,
  );
  expect(await metricOf(service.metrics, "replayable_partition_stalled", stalled)).toBe(1);
  expect(await metricOf(service.metrics, "replayable_partition_stalled", { topic, partition: "1" })).toBe(0);
  // Once per stall: still one warning after more failed attempts (each spans lag refreshes).
  const retries = await metricOf(service.metrics, "replayable_transaction_retries_total");
  await waitFor("three more failed attempts on partition 0", async () =>
    (await metricOf(service.metrics, "replayable_transaction_retries_total")) >= retries + 3
      ? true
      : undefined,
  );
  expect(warnings()).toHaveLength(1);
  expect(warnings()[0]).toMatchObject({ level: 40, topic, highWatermark: "10", lag: "10" });
  expect(warnings()[0]!.noProgressForMs).toBeGreaterThanOrEqual(2000);

  // The cause is fixed: the partition moves, /readyz is ready again and the gauge drops.
  await stack.db.pool.query("CREATE TABLE public.p0 (o bigint, v text)");
  await waitFor("/readyz to answer 200 again", async () =>
    (await readyz(port)).status === 200 ? true : undefined,
  );
  await waitForCaughtUp(stack.admin, group, topic);
  expect(await metricOf(service.metrics, "replayable_partition_stalled", stalled)).toBe(0);
  expect(lines.filter((l) => l.msg === "partition makes progress again" && l.partition === 0)).toHaveLength(
    1,
  );
  expect(warnings()).toHaveLength(1);
  await service.stop();

  async function waitForCaughtUpOn(partition: number): Promise<void> {
    await waitFor(`partition ${partition} applied`, async () => {
      const r = await stack.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM public.p${partition}`);
      return Number(r.rows[0]!.n) === 10 ? true : undefined;
    });
  }
});
