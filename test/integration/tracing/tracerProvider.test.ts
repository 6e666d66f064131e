/**
 * A library user's own tracer provider (ConsumerServiceOptions.tracerProvider, issue 29): the
 * service's transactions become spans of it whatever OTEL_TRACES_EXPORTER says, and stopping the
 * service flushes it but leaves it running, as it is the user's.
 */
import { SpanKind, TraceFlags } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { BROKERS, testKafka, uniqueName, useStack, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

it("makes each transaction a span of the tracer provider the library user passes, and leaves the provider running on stop", async () => {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const topic = uniqueName("user-traced");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  const spanId = "00f067aa0ba902b7";
  await produceRecords(testKafka(), topic, [
    {
      key: "a",
      value: JSON.stringify({ account: "acc-user", amount: 2 }),
      headers: {
        ce_specversion: "1.0",
        ce_id: `${topic}-1`,
        ce_type: "ledger.account.credited",
        traceparent: `00-${traceId}-${spanId}-01`,
      },
    },
  ]);
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      DATABASE_URL: stack.db.url,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      OTEL_TRACES_EXPORTER: "none",
    }),
    projection: ledgerProjection,
    log: createLogger("silent"),
    http: false,
    tracerProvider,
  });
  await service.start();
  try {
    await waitForCaughtUp(stack.admin, group, topic);
  } finally {
    await service.stop();
  }
  expect(await service.done).toEqual({ kind: "stopped" });

  const spans = exporter.getFinishedSpans();
  const transaction = spans.find((s) => s.name === `process ${topic}`);
  expect(transaction?.kind).toBe(SpanKind.CONSUMER);
  expect(transaction?.links.map((l) => l.context)).toEqual([
    expect.objectContaining({ traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true }),
  ]);
  expect(transaction?.attributes).toMatchObject({
    "messaging.consumer.group.name": group,
    "messaging.batch.message_count": 1,
    "replayable.records.applied": 1,
  });
  const statements = spans.filter((s) => s.parentSpanContext?.spanId === transaction?.spanContext().spanId);
  expect(statements.map((s) => s.name)).toEqual(expect.arrayContaining(["BEGIN", "COMMIT"]));

  // Still the user's: a span made after the service stopped is exported.
  tracerProvider.getTracer("after").startSpan("after stop").end();
  expect(exporter.getFinishedSpans().some((s) => s.name === "after stop")).toBe(true);
  await tracerProvider.shutdown();
});
