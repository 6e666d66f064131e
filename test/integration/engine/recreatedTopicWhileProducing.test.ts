/**
 * Regression (issue "Effectively once on a real cluster", fix 5): the CHECKPOINT_AHEAD_OF_LOG
 * recheck looped while a producer kept writing to a recreated topic: each failed transaction asked
 * Kafka for the high watermark again and retried with it, until the high watermark passed the
 * checkpoint; the new records below the checkpoint were then skipped as duplicates, exactly what
 * the guard exists to prevent. The batch is now rechecked once, then the member stops. (The
 * check made on every group join usually stops the member first, as it does here: this test holds
 * the end-to-end guarantee; the recheck itself is bounded by reading applyWithRetry.)
 */
import { expect, it, onTestFinished } from "vitest";
import { Partitioners } from "kafkajs";
import { ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { startCli } from "../../helpers/process.js";
import { runArgs } from "../../helpers/replay.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

it("a recreated topic that a producer keeps writing to: rechecked once, the member stops, no new record skipped as a duplicate", async () => {
  const topic = uniqueName("recreated-busy");
  const group = uniqueName("g");
  const old = await produceLedger(stack.admin, topic, { count: 200, partitions: 1, seed: 5 });
  // The member runs on the old topic, caught up, when the topic is deleted and recreated.
  const member = startCli(runArgs(stack.db.url, topic, group));
  onTestFinished(() => member.kill());
  await waitForCaughtUp(stack.admin, group, topic);

  await stack.admin.deleteTopics([topic]);
  // The controller deletes the old log asynchronously: 60 s was not enough on a loaded machine.
  await waitFor(
    "the topic to be recreated",
    async () => ((await stack.admin.createTopic(topic, 1)) ? true : undefined),
    180_000,
  );
  // A producer writes 600 new records, 10 at a time: the high watermark passes the checkpoint
  // (200) a few seconds in.
  const fresh = generateLedgerStream({ count: 600, duplicateRate: 0, seed: 6, idPrefix: "new-" });
  const producer = testKafka().producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  onTestFinished(() => producer.disconnect());
  let producing = true;
  onTestFinished(() => {
    producing = false;
  });
  const production = (async () => {
    for (let i = 0; i < fresh.records.length && producing; i += 10) {
      await producer.send({
        topic,
        acks: -1,
        messages: fresh.records
          .slice(i, i + 10)
          .map((r) => ({ key: r.key, value: r.value, headers: r.headers })),
      });
      await new Promise((resolve) => setTimeout(resolve, 100)); // the production rate, not a synchronisation
    }
  })();

  const exit = await member.exited;
  producing = false;
  await production;
  expect(exit.code, member.stderr()).toBe(1);
  expect(member.stderr()).toMatch(/the high watermark \d+ is below projection ledger's checkpoint 200/);
  const rechecks = member
    .stderr()
    .split("\n")
    .filter((l) => l.includes("batch older than the checkpoint; rechecking"));
  expect(rechecks.length).toBeLessThanOrEqual(1);
  const checkpoint = await stack.db.pool.query<{ next_offset: string }>(
    "SELECT next_offset FROM replayable.checkpoints WHERE topic = $1 AND partition = 0",
    [topic],
  );
  expect(checkpoint.rows[0]?.next_offset).toBe("200");
  expect(await ledgerChecksumOf(stack.db.pool)).toBe(old.checksum);
}, 360_000);
