/**
 * Regression (issue "Effectively once on a real cluster", fix 2): on a topic written by
 * transactional producers the committed offset and the checkpoint stopped at the last data record
 * + 1, so the commit markers and aborted records behind it stayed as lag forever (lag 1 after every
 * committed transaction, more on a topic whose tail is an aborted transaction), including fetches
 * that held only markers or aborted records, which KafkaJS never hands to eachBatch. The member
 * now commits and checkpoints through the end of each fetch, and `status`, the lag gauge and the
 * replay dry run agree on 0.
 */
import { expect, it, onTestFinished } from "vitest";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import { ledgerChecksumOf } from "../helpers/ledger.js";
import { scrapeMetric, startCliInTest } from "../helpers/process.js";
import { cliJson, runArgs } from "../helpers/replay.js";
import { uniqueName, useStack, waitFor, waitForCaughtUp } from "../helpers/stack.js";
import { transactionalProducer } from "../helpers/transactional.js";
import { createReplicatedTopic } from "../helpers/cluster.js";

const stack = useStack();

it("a transactional topic ending with aborted transactions: committed offset and checkpoint reach the high watermark, lag 0 in status, /metrics and the replay dry run", async () => {
  const topic = uniqueName("txn-lag");
  const group = uniqueName("g");
  await createReplicatedTopic(topic, 1);
  const stream = generateLedgerStream({ count: 30, duplicateRate: 0, seed: 11 });
  const records = stream.records.map((r) => ({ key: r.key, value: r.value, headers: r.headers }));
  const garbage = (n: number) => [{ key: "x", value: `aborted-${n}` }];
  const a = await transactionalProducer();
  const b = await transactionalProducer();
  onTestFinished(async () => {
    await a.disconnect();
    await b.disconnect();
  });
  // Ten committed transactions of three records each, with aborted ones of the other producer
  // interleaved; the log ends with two aborted transactions interleaved (markers only at the end).
  for (let i = 0; i < 10; i++) {
    const [p, q] = i % 2 === 0 ? [a, b] : [b, a];
    await p.begin();
    await q.begin();
    await p.send(topic, records.slice(i * 3, i * 3 + 3));
    await q.send(topic, garbage(i));
    await p.commit();
    await q.abort();
  }
  await a.begin();
  await b.begin();
  await a.send(topic, garbage(100));
  await b.send(topic, garbage(101));
  await b.abort();
  await a.abort();

  const cli = startCliInTest(runArgs(stack.db.url, topic, group), { REPLAYABLE_LAG_REFRESH_MS: "500" });
  const port = await cli.metricsPort();
  // The committed offset reaches the high watermark (markers and aborted records included).
  await waitForCaughtUp(stack.admin, group, topic, 60_000);
  expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
  const [end] = await stack.admin.topicOffsets(topic);
  const checkpoint = await stack.db.pool.query<{ next_offset: string }>(
    "SELECT next_offset FROM replayable.checkpoints WHERE topic = $1 AND partition = 0",
    [topic],
  );
  expect(checkpoint.rows[0]?.next_offset).toBe(end!.highWatermark);
  const letters = await stack.db.pool.query("SELECT 1 FROM replayable.dead_letters");
  expect(letters.rowCount).toBe(0);

  // The lag gauge.
  await waitFor("the lag gauge at 0", async () =>
    (await scrapeMetric(port, "replayable_consumer_lag_records", { topic })) === 0 ? true : undefined,
  );
  cli.child.kill("SIGTERM");
  await cli.exited;

  // status and the replay dry run.
  const status = await cliJson<{ partitions: { lag: string }[] } | { lag: string }[]>([
    "status",
    "--group",
    group,
    "--topic",
    topic,
    "--projection",
    "ledger",
    "--database-url",
    stack.db.url,
  ]);
  const rows = Array.isArray(status) ? status : status.partitions;
  expect(rows.map((r) => r.lag)).toEqual(["0"]);
  const plan = await cliJson<{ totals: { firstApplies: string; duplicates: string; skipped: string } }>([
    "replay",
    "--group",
    group,
    "--topic",
    topic,
    "--to-current",
    "--projection",
    "ledger",
    "--database-url",
    stack.db.url,
  ]);
  expect(plan.totals).toEqual({ firstApplies: "0", duplicates: "0", skipped: "0" });
});
