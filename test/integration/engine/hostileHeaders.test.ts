/**
 * Records with headers a Java producer may send, through the real broker to a running member with
 * a DLQ topic (issue 26, items 1 and 4): a null header value (`new RecordHeader("k", null)`,
 * length -1 on the wire) and a header named `__proto__`. The member keeps running, the good record
 * is applied, the bad one is dead-lettered, and the dead letter and the DLQ record carry the
 * headers unchanged. The records are produced with KafkaJS's record encoder as patched (patch 007),
 * which writes a null value as length -1, exactly as Java's producer does.
 */
import { CompressionTypes, Partitioners, type IHeaders } from "kafkajs";
import { expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { DLQ_HEADERS } from "../../../src/kafka/deadLetterPublisher.js";
import { readTopic } from "../../../src/kafka/readTopic.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { selectDeadLetters } from "../../../src/sql/selectDeadLetters.js";
import {
  BROKERS,
  TEST_CLIENT_ENV,
  testKafka,
  uniqueName,
  waitForCaughtUp,
  useStack,
} from "../../helpers/stack.js";

const stack = useStack();

/** CloudEvents headers plus a null-valued `trace`, `__proto__` and a repeated name with a null in it. */
function hostileHeaders(id: string): IHeaders {
  const headers = Object.create(null) as IHeaders;
  headers.ce_specversion = "1.0";
  headers.ce_id = id;
  headers.ce_type = "ledger.account.credited";
  headers.trace = null;
  headers.__proto__ = "p";
  headers.repeated = ["a", null, "b"];
  return headers;
}

it("regression: a null header value and a __proto__ header neither stop the member nor get lost", async () => {
  const topic = uniqueName("hostile");
  const dlqTopic = uniqueName("dlq");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  await stack.admin.createTopic(dlqTopic, 1);
  const kafka = testKafka();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  onTestFinished(() => producer.disconnect());
  await producer.send({
    topic,
    acks: -1,
    compression: CompressionTypes.None,
    messages: [
      {
        key: "acc-h",
        value: JSON.stringify({ account: "acc-h", amount: 7 }),
        headers: hostileHeaders(`${topic}-1`),
      },
      { key: "acc-h", value: "not json", headers: hostileHeaders(`${topic}-2`) },
    ],
  });

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
  await Promise.race([
    waitForCaughtUp(stack.admin, group, topic),
    service.done.then((outcome) => {
      throw new Error(`the member stopped: ${JSON.stringify(outcome)}`);
    }),
  ]);

  const balance = await stack.db.pool.query<{ balance_cents: string }>(
    "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = 'acc-h'",
  );
  expect(balance.rows).toEqual([{ balance_cents: "7" }]);

  const [letter, ...others] = await selectDeadLetters(stack.db.pool, { topic });
  expect(others).toEqual([]);
  expect(letter!.errorCode).toBe("DECODE_FAILED");
  const { headers } = letter!.record;
  // jsonb keeps the order of each name's values, not the order of distinct names.
  expect(Object.keys(headers).sort()).toEqual(
    ["ce_specversion", "ce_id", "ce_type", "trace", "__proto__", "repeated"].sort(),
  );
  expect(headers.trace).toEqual([null]);
  expect(headers.__proto__).toEqual([Buffer.from("p")]);
  expect(headers.repeated).toEqual([Buffer.from("a"), null, Buffer.from("b")]);

  const published = await readTopic(kafka, dlqTopic);
  expect(published).toHaveLength(1);
  const dlq = published[0]!.headers;
  expect(dlq.trace).toEqual([null]);
  expect(dlq.__proto__).toEqual([Buffer.from("p")]);
  expect(dlq.repeated).toEqual([Buffer.from("a"), null, Buffer.from("b")]);
  expect(dlq[DLQ_HEADERS.code]).toEqual([Buffer.from("DECODE_FAILED")]);

  await service.stop();
  expect(await service.done).toEqual({ kind: "stopped" });
});
