/**
 * Dead letters published to REPLAYABLE_DLQ_TOPIC after COMMIT: the database row stays the source of
 * truth, so a publish that fails is logged and counted, and the consumer carries on.
 */
import { expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
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

const headers = (id: string) => ({ ce_specversion: "1.0", ce_id: id, ce_type: "ledger.account.credited" });

it("a DLQ publish that fails (the topic was deleted) is counted, the row stays unpublished, and consuming goes on", async () => {
  const topic = uniqueName("dlq-src");
  const dlqTopic = uniqueName("dlq");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  await stack.admin.createTopic(dlqTopic, 1);
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      REPLAYABLE_DLQ_TOPIC: dlqTopic,
    }),
    projection: ledgerProjection,
    log: createLogger("silent"),
    http: false,
  });
  onTestFinished(() => service.stop());
  await service.start();
  const kafka = testKafka();

  await produceRecords(kafka, topic, [{ key: "a", value: "not json", headers: headers(`${topic}-1`) }]);
  await waitFor("the first dead letter to be published", async () =>
    (await metricOf(service.metrics, "replayable_dlq_publishes_total", { result: "published" })) === 1
      ? true
      : undefined,
  );

  await stack.admin.deleteTopics([dlqTopic]);
  await produceRecords(kafka, topic, [
    { key: "a", value: "still not json", headers: headers(`${topic}-2`) },
    { key: "a", value: JSON.stringify({ account: "acc-dlq", amount: 3 }), headers: headers(`${topic}-3`) },
  ]);
  await waitForCaughtUp(stack.admin, group, topic);
  await waitFor(
    "the failed publish to be counted",
    async () =>
      (await metricOf(service.metrics, "replayable_dlq_publishes_total", { result: "failed" })) === 1
        ? true
        : undefined,
    90_000,
  );
  const rows = await stack.db.pool.query<{ offset: string; published: boolean }>(
    `SELECT "offset", published_at IS NOT NULL AS published FROM replayable.dead_letters ORDER BY "offset"`,
  );
  expect(rows.rows).toEqual([
    { offset: "0", published: true },
    { offset: "1", published: false },
  ]);
  expect(await metricOf(service.metrics, "replayable_records_applied_total")).toBe(1);
  await service.stop();
  expect(await service.done).toEqual({ kind: "stopped" });
});
