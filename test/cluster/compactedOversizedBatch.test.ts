/**
 * Regression (issue 11, case 9 "Stuck forever after compaction"): on a compacted topic the log
 * cleaner keeps an idempotent producer's last batch as an empty batch (its records superseded) to
 * preserve the producer's sequence state. When a batch larger than the fetch size
 * (REPLAYABLE_MAX_BATCH_BYTES, KafkaJS `maxBytesPerPartition`) follows it, the broker returns the
 * empty batch and a truncated piece of the large one; KafkaJS 2.2.4 decoded no record from that,
 * never moved the fetch offset and fetched the same bytes forever. Fixed at the source by
 * patches/kafkajs+2.2.4+002+compacted-empty-batch.patch (see patches/README.md).
 */
import { expect, it } from "vitest";
import { produceRecords } from "../../src/kafka/producer.js";
import type { Projection } from "../../src/projection.js";
import { metricOf, runUntilCaughtUp } from "../helpers/inProcess.js";
import { highWatermarkOf, readToEnd } from "../helpers/readToEnd.js";
import { testKafka, uniqueName, useStack, waitFor } from "../helpers/stack.js";
import { createReplicatedTopic } from "../helpers/cluster.js";

const stack = useStack();

/** Keeps the latest value of each key in `public.kv`, as a compacted topic's reader would. */
const latestByKey: Projection<string | null> = {
  name: "latest_by_key",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: ["public.kv"],
  decode: (record) => record.value?.toString("utf8") ?? null,
  async apply({ client }, { record, value }) {
    const key = record.key?.toString("utf8") ?? "";
    if (value === null) await client.query("DELETE FROM public.kv WHERE k = $1", [key]);
    else
      await client.query(
        "INSERT INTO public.kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
        [key, value],
      );
  },
};

/** The fetch size the consumer runs with; the large batch is several times bigger. */
const FETCH_BYTES = 1024;

it("reaches lag 0 on a compacted topic whose empty batch is followed by a batch larger than the fetch size", async () => {
  const topic = uniqueName("compacted");
  const group = uniqueName("g");
  // Segments roll on the first append 200 ms after a segment began; the cleaner takes any dirt.
  await createReplicatedTopic(topic, 1, {
    config: {
      "cleanup.policy": "compact",
      "segment.ms": "200",
      "min.cleanable.dirty.ratio": "0.01",
      "min.compaction.lag.ms": "0",
      "delete.retention.ms": "100",
    },
  });
  await stack.db.pool.query("CREATE TABLE public.kv (k text PRIMARY KEY, v text NOT NULL)");

  // Offset 0: the only batch of an idempotent producer. Superseded below, the cleaner empties it
  // but keeps it (the producer's last batch), so the log starts with an empty batch.
  const idempotent = testKafka().producer({ idempotent: true, maxInFlightRequests: 1 });
  await idempotent.connect();
  try {
    await idempotent.send({ topic, acks: -1, messages: [{ key: "k", value: "superseded", partition: 0 }] });
  } finally {
    await idempotent.disconnect();
  }
  // Offsets 1..60: one batch (one send) of about 4 KiB, four times the fetch size.
  const large = Array.from({ length: 60 }, (_, i) => ({
    key: `large-${i}`,
    value: `value-${i}-${"x".repeat(40)}`,
    partition: 0,
  }));
  await produceRecords(testKafka(), topic, large);
  // Offset 61: the new value of "k".
  await produceRecords(testKafka(), topic, [{ key: "k", value: "latest", partition: 0 }]);

  // Roll segments with filler records until the cleaner has emptied offset 0: a reader with a
  // large fetch then gets the large batch's first record (offset 1) first.
  let fillers = 0;
  await waitFor(
    "the log cleaner to empty the first batch",
    async () => {
      await produceRecords(testKafka(), topic, [{ key: `filler-${fillers++}`, value: "f", partition: 0 }]);
      const highWatermark = await highWatermarkOf(stack.admin, topic);
      const records = await readToEnd(topic, highWatermark);
      return records[0]?.offset === "1" ? true : undefined;
    },
    150_000,
    1000,
  );

  const highWatermark = await highWatermarkOf(stack.admin, topic);
  const survivors = await readToEnd(topic, highWatermark);
  expect(survivors.some((r) => r.value === "superseded")).toBe(false);
  const model = new Map<string, string>();
  for (const r of survivors) model.set(r.key ?? "", r.value ?? "");
  expect(model.get("k")).toBe("latest");

  const metrics = await runUntilCaughtUp(stack.admin, {
    projection: latestByKey,
    databaseUrl: stack.db.url,
    topic,
    group,
    env: { REPLAYABLE_MAX_BATCH_BYTES: String(FETCH_BYTES) },
  });
  const state = await stack.db.pool.query<{ k: string; v: string }>("SELECT k, v FROM public.kv ORDER BY k");
  expect(new Map(state.rows.map((r) => [r.k, r.v]))).toEqual(model);
  expect(await metricOf(metrics, "replayable_records_applied_total", { topic })).toBe(survivors.length);
});
