/**
 * Regression (breaker, after the partition lanes): with REPLAYABLE_PARTITIONS_CONCURRENTLY=1 a
 * transaction waiting for a row lock held elsewhere kept the only transaction slot, so every
 * partition stopped for as long as the lock was held (forever, for a lock never released). A
 * transaction now waits at most REPLAYABLE_LOCK_TIMEOUT_MS for a lock (PostgreSQL lock_timeout),
 * then is retried with back-off outside the slots.
 */
import { expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { metricOf } from "../../helpers/inProcess.js";
import { ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { combinedChecksum, committedOf } from "../../helpers/replay.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { produceRecords } from "../../../src/kafka/producer.js";
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

it("one transaction slot and partition 0's checkpoint row locked elsewhere: the other partitions are applied while the lock is held", async () => {
  const topic = uniqueName("lock-slot");
  const group = uniqueName("g");
  const stream = await produceLedger(stack.admin, topic, { count: 600, partitions: 3, seed: 9 });
  // Another session holds partition 0's checkpoint row until the test releases it.
  await stack.db.pool.query(
    "INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset) VALUES ('ledger', $1, 0, 0)",
    [topic],
  );
  const holder = await stack.db.pool.connect();
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await holder.query("COMMIT");
    holder.release();
  };
  onTestFinished(release);
  await holder.query("BEGIN");
  await holder.query("SELECT * FROM replayable.checkpoints WHERE topic = $1 AND partition = 0 FOR UPDATE", [
    topic,
  ]);

  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_PROJECTION: "ledger",
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      REPLAYABLE_PARTITIONS_CONCURRENTLY: "1",
      REPLAYABLE_LOCK_TIMEOUT_MS: "500",
      REPLAYABLE_RETRY_INITIAL_MS: "100",
      REPLAYABLE_RETRY_MAX_MS: "1000",
    }),
    projection: ledgerProjection,
    log: createLogger("silent"),
    http: false,
  });
  onTestFinished(() => service.stop());
  await service.start();

  // Partition 0's transaction waits on the lock; only then do new records arrive on partition 1,
  // so they need the slot partition 0's transaction would hold for as long as the lock is held.
  await waitFor("partition 0 waiting on its checkpoint row lock", async () => {
    const r = await stack.db.pool.query(
      "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    return (r.rowCount ?? 0) > 0 ? true : undefined;
  });
  const more = generateLedgerStream({ count: 200, duplicateRate: 0, seed: 10, idPrefix: "more-" });
  await produceRecords(
    testKafka(),
    topic,
    more.records.map((r) => ({ ...r, partition: 1 })),
  );
  const ends = await stack.admin.topicOffsets(topic);
  await waitFor(
    "partitions 1 and 2 committed to their high watermarks while partition 0 is locked",
    async () => {
      const committed = await committedOf(stack.admin, group, topic);
      return [1, 2].every((p) => committed[p] === ends.find((e) => e.partition === p)?.highWatermark)
        ? true
        : undefined;
    },
  );
  expect(released).toBe(false);
  expect(
    await metricOf(service.metrics, "replayable_transaction_retries_total", { reason: "lock_timeout" }),
  ).toBeGreaterThan(0);

  await release();
  await waitForCaughtUp(stack.admin, group, topic);
  expect(await ledgerChecksumOf(stack.db.pool)).toBe(combinedChecksum(stream, more));
  await service.stop();
  expect(await service.done).toEqual({ kind: "stopped" });
});
