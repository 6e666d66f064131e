/**
 * More partitions than transaction slots (REPLAYABLE_PARTITIONS_CONCURRENTLY): a partition's
 * prefetched batch arrives while its transaction waits for a slot, and the transaction that gets
 * the slot takes it in (src/engine/partitionWorker.ts, "absorbs"). Against a real broker and
 * PostgreSQL: transactions span more than one fetch, and every record is still applied once, the
 * transactions of a partition cover it without a gap or an overlap, and the committed offsets reach
 * the high watermarks.
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
  testKafka,
  uniqueName,
  useStack,
  waitForCaughtUp,
  TEST_CLIENT_ENV,
} from "../../helpers/stack.js";

const stack = useStack();
const PARTITIONS = 3;
const PER_PARTITION = 600;
/** Bytes of each value; no key, no headers, so a record's bytes (record.ts recordBytes) are these. */
const VALUE_BYTES = 1000;

/** Records each (partition, offset) in `public.applied`, whose primary key refuses a second apply. */
const slowRecording: Projection<string> = {
  name: "absorbing",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: ["public.applied"],
  decode: (record) => record.value?.toString("utf8") ?? "",
  async apply() {},
  async applyBatch({ client }, items) {
    await client.query("INSERT INTO public.applied (p, o) SELECT $1, unnest($2::bigint[])", [
      items[0]!.record.partition,
      items.map((i) => i.record.offset),
    ]);
    // Holds the only slot for a moment, so the other partitions' batches pile up behind it.
    await client.query("SELECT pg_sleep(0.05)");
  },
};

describe("transactions absorb the batches waiting behind them", () => {
  it("spans more than one fetch per transaction, every record applied once, the offsets committed to the end", async () => {
    const topic = uniqueName("absorb");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, PARTITIONS);
    await stack.db.pool.query("CREATE TABLE public.applied (p int, o bigint, PRIMARY KEY (p, o))");
    const value = "x".repeat(VALUE_BYTES);
    // Ten records per send: small record batches, so a fetch never exceeds its size (KIP-74).
    await produceRecords(
      testKafka(),
      topic,
      Array.from({ length: PARTITIONS * PER_PARTITION }, (_, i) => ({
        key: null,
        value,
        partition: i % PARTITIONS,
      })),
      { batchSize: 10 * PARTITIONS },
    );

    const committed: BatchCommitted[] = [];
    const service = new ConsumerService({
      config: loadConfig({
        KAFKA_BROKERS: BROKERS.join(","),
        ...TEST_CLIENT_ENV,
        DATABASE_URL: stack.db.url,
        REPLAYABLE_PROJECTION: slowRecording.name,
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
        REPLAYABLE_PARTITIONS_CONCURRENTLY: "1",
        // The smallest budget: fetches of about 50 to 140 KiB, several per partition.
        REPLAYABLE_MEMORY_BUDGET_BYTES: "4194304",
      }),
      projection: slowRecording,
      log: createLogger("silent"),
      http: false,
      onBatchCommitted: (event) => committed.push(event),
    });
    onTestFinished(() => service.stop());
    await service.start();
    await waitForCaughtUp(stack.admin, group, topic);
    const fetchBytes = await metricOf(service.metrics, "replayable_fetch_bytes_per_partition");
    await service.stop();

    // Some transaction held more records than the largest fetch could.
    const largest = Math.max(...committed.map((e) => e.records));
    expect(fetchBytes).toBeGreaterThan(0);
    expect(largest * VALUE_BYTES).toBeGreaterThan(fetchBytes);

    const rows = await stack.db.pool.query<{ p: number; n: string; max: string }>(
      "SELECT p, count(*) AS n, max(o) AS max FROM public.applied GROUP BY p ORDER BY p",
    );
    expect(rows.rows.map((r) => [r.p, Number(r.n), r.max])).toEqual(
      Array.from({ length: PARTITIONS }, (_, p) => [p, PER_PARTITION, String(PER_PARTITION - 1)]),
    );
    for (let p = 0; p < PARTITIONS; p++) {
      let next = 0n;
      for (const event of committed.filter((e) => e.partition === p)) {
        expect(BigInt(event.firstOffset)).toBe(next);
        next = BigInt(event.lastOffset) + 1n;
      }
      expect(next).toBe(BigInt(PER_PARTITION));
    }
    expect(committed.every((e) => e.offsetCommit === "committed")).toBe(true);
    expect(Object.values(await committedOf(stack.admin, group, topic))).toEqual(
      Array.from({ length: PARTITIONS }, () => String(PER_PARTITION)),
    );
    const letters = await stack.db.pool.query("SELECT 1 FROM replayable.dead_letters");
    expect(letters.rowCount).toBe(0);
  });
});
