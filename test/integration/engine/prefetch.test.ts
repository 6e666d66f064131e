/**
 * Prefetch (REPLAYABLE_PREFETCH): KafkaJS fetches a partition's next batch while the batch before
 * is applied. The handler still runs one batch of a partition at a time, in offset order; a batch
 * left unapplied (the partition paused after failed attempts, a stop) is fetched again from its
 * first unapplied offset, and the prefetched batch behind it is dropped.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService, type BatchCommitted } from "../../../src/engine/consumerService.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { metricOf } from "../../helpers/inProcess.js";
import { committedOf } from "../../helpers/replay.js";
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
const RECORDS = 300;

/**
 * Appends each record's offset to `public.applied` (the primary key refuses a second apply,
 * which would be dead-lettered). While `gate.open` is false, a record at offset `gate.at` or above
 * fails with an error that is not the record's fault, so its transaction is retried, then its
 * partition paused.
 */
function gatedProjection(gate: { open: boolean; at: bigint }): Projection<string> {
  return {
    name: "gated",
    dedupe: { kind: "offset" },
    defaultTopics: [],
    tables: ["public.applied"],
    decode: (record) => record.value?.toString("utf8") ?? "",
    async apply({ client }, { record }) {
      if (!gate.open && BigInt(record.offset) >= gate.at) throw new Error("gate closed (test)");
      await client.query("INSERT INTO public.applied (o) VALUES ($1)", [record.offset]);
    },
  };
}

async function appliedOffsets(): Promise<string[]> {
  const r = await stack.db.pool.query<{ o: string }>("SELECT o FROM public.applied ORDER BY seq");
  return r.rows.map((row) => row.o);
}

async function startMember(
  topic: string,
  group: string,
  projection: Projection<string>,
  env: Record<string, string>,
  committed: BatchCommitted[],
): Promise<ConsumerService> {
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_PROJECTION: projection.name,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      // About a dozen records per fetch: many batches per partition, so one is always prefetched.
      REPLAYABLE_MAX_BATCH_BYTES: "1024",
      REPLAYABLE_RETRY_INITIAL_MS: "50",
      REPLAYABLE_RETRY_MAX_MS: "300",
      ...env,
    }),
    projection,
    log: createLogger("silent"),
    http: false,
    onBatchCommitted: (event) => committed.push(event),
  });
  onTestFinished(() => service.stop());
  await service.start();
  return service;
}

async function setUp(): Promise<{ topic: string; group: string }> {
  const topic = uniqueName("prefetch");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  await stack.db.pool.query("CREATE TABLE public.applied (seq bigserial PRIMARY KEY, o bigint UNIQUE)");
  await produceRecords(
    testKafka(),
    topic,
    Array.from({ length: RECORDS }, (_, i) => ({ key: null, value: `value-${i}`, partition: 0 })),
  );
  return { topic, group };
}

describe.each([
  { prefetch: "true", title: "prefetch on" },
  { prefetch: "false", title: "prefetch off" },
])("$title", ({ prefetch }) => {
  it("a partition paused mid-stream resumes at its first unapplied offset: every record applied once, in order", async () => {
    const { topic, group } = await setUp();
    const gate = { open: false, at: 150n };
    const committed: BatchCommitted[] = [];
    const service = await startMember(
      topic,
      group,
      gatedProjection(gate),
      { REPLAYABLE_PREFETCH: prefetch },
      committed,
    );

    await waitFor("the partition paused at the gate", async () =>
      (await metricOf(service.metrics, "replayable_paused_partitions")) === 1 ? true : undefined,
    );
    const beforeGate = await appliedOffsets();
    expect(beforeGate.length).toBeLessThanOrEqual(150);
    gate.open = true;
    await waitForCaughtUp(stack.admin, group, topic);
    await service.stop();

    // Offsets 0..299 exactly once, in offset order: nothing skipped by the prefetched batches.
    expect(await appliedOffsets()).toEqual(Array.from({ length: RECORDS }, (_, i) => String(i)));
    // The transactions cover the partition without a gap or an overlap.
    let next = 0n;
    for (const event of committed) {
      expect(BigInt(event.firstOffset)).toBe(next);
      next = BigInt(event.lastOffset) + 1n;
    }
    expect(next).toBe(BigInt(RECORDS));
    const letters = await stack.db.pool.query("SELECT 1 FROM replayable.dead_letters");
    expect(letters.rowCount).toBe(0);
    expect(await metricOf(service.metrics, "replayable_transaction_retries_total")).toBeGreaterThanOrEqual(3);
  });

  it("a graceful stop mid-stream commits the offset of every transaction it committed before leaving the group", async () => {
    const { topic, group } = await setUp();
    // Slow transactions (20 ms per record), so the stop lands while one is in flight.
    await stack.db.pool.query(
      `CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN NEW; END $$;
       CREATE TRIGGER slow BEFORE INSERT ON public.applied FOR EACH ROW EXECUTE FUNCTION public.slow()`,
    );
    const gate = { open: true, at: 0n };
    const committed: BatchCommitted[] = [];
    const service = await startMember(
      topic,
      group,
      gatedProjection(gate),
      { REPLAYABLE_PREFETCH: prefetch },
      committed,
    );
    await waitFor("some records applied", async () =>
      (await appliedOffsets()).length >= 40 ? true : undefined,
    );
    await service.stop();
    expect(await service.done).toEqual({ kind: "stopped" });

    const applied = await appliedOffsets();
    expect(applied.length).toBeLessThan(RECORDS);
    const checkpoint = await stack.db.pool.query<{ next_offset: string }>(
      "SELECT next_offset FROM replayable.checkpoints WHERE topic = $1 AND partition = 0",
      [topic],
    );
    // The stop let the transaction in flight finish, committed its offset, then left the group.
    expect(checkpoint.rows[0]!.next_offset).toBe(String(applied.length));
    expect((await committedOf(stack.admin, group, topic))[0]).toBe(String(applied.length));
    expect(committed.every((e) => e.offsetCommit === "committed")).toBe(true);
  });
});

describe("prefetch and REPLAYABLE_PARTITIONS_CONCURRENTLY", () => {
  it.each([1, 3])(
    "runs at most %i transactions at once, though every partition has a batch waiting",
    async (concurrently) => {
      const topic = uniqueName("prefetch-slots");
      const group = uniqueName("g");
      await stack.admin.createTopic(topic, 6);
      await produceRecords(
        testKafka(),
        topic,
        Array.from({ length: 240 }, (_, i) => ({ key: null, value: `v${i}`, partition: i % 6 })),
      );
      let running = 0;
      let most = 0;
      // Each batch's apply holds its transaction open for a moment, so overlapping ones are seen.
      const counting: Projection<string> = {
        name: "counting",
        dedupe: { kind: "offset" },
        defaultTopics: [],
        tables: [],
        decode: (record) => record.value?.toString("utf8") ?? "",
        async apply() {},
        async applyBatch({ client }) {
          running += 1;
          most = Math.max(most, running);
          try {
            await client.query("SELECT pg_sleep(0.05)");
          } finally {
            running -= 1;
          }
        },
      };
      const service = await startMember(
        topic,
        group,
        counting,
        { REPLAYABLE_PARTITIONS_CONCURRENTLY: String(concurrently), REPLAYABLE_MAX_BATCH_BYTES: "1024" },
        [],
      );
      await waitForCaughtUp(stack.admin, group, topic);
      await service.stop();
      expect(most).toBeLessThanOrEqual(concurrently);
      if (concurrently > 1) expect(most).toBeGreaterThan(1);
    },
  );
});
