/**
 * OpenTelemetry traces of a running member (issue 29, docs/observability.md): a record produced in
 * a real producer span, applied by `replayable run` with OTEL_TRACES_EXPORTER=otlp, reaches an
 * OTLP/HTTP receiver started here as a transaction span linked to the producer span, with the
 * messaging attributes and the PostgreSQL statements as child spans; with tracing off, no
 * OpenTelemetry SDK module is loaded at all. Real Kafka, real PostgreSQL, the real exporter.
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  context,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  trace,
  TraceFlags,
  type SpanContext,
} from "@opentelemetry/api";
import { TraceState, W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { expect, it, onTestFinished } from "vitest";
import { ERROR_CODES } from "../../../src/errors.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { readTopic } from "../../../src/kafka/readTopic.js";
import { startOtlpReceiver, SPAN_KIND, type ReceivedSpan } from "../../helpers/otlpReceiver.js";
import { runCli, startCliInTest } from "../../helpers/process.js";
import { BROKERS, testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

/** Preloaded into the member: writes the modules it loaded, and who loaded them, to LOADED_MODULES_FILE. */
const LOADED_MODULES_HOOK = fileURLToPath(new URL("../../helpers/loadedModules.mjs", import.meta.url));
const MEMBER = [
  process.execPath,
  "--import",
  LOADED_MODULES_HOOK,
  "--import",
  "tsx",
  "src/cli/main.ts",
] as const;

/** The producer's side: a real SDK tracer, its spans kept in memory. */
const producerSpans = new InMemorySpanExporter();
const producerTracer = new TracerProvider({
  spanProcessors: [new SimpleSpanProcessor({ exporter: producerSpans })],
}).getTracer("test-producer");
const propagator = new W3CTraceContextPropagator();

/**
 * A producer span for one record (`send <topic>`, kind PRODUCER, under a remote parent carrying
 * `tracestate`), ended, and the W3C headers it injects: `traceparent` and `tracestate`.
 */
function producerSpan(topic: string): { spanContext: SpanContext; headers: Record<string, string> } {
  const parent = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: randomHex(32),
    spanId: randomHex(16),
    traceFlags: TraceFlags.SAMPLED,
    traceState: new TraceState("vendor=test"),
    isRemote: true,
  });
  const span = producerTracer.startSpan(`send ${topic}`, { kind: SpanKind.PRODUCER }, parent);
  const headers: Record<string, string> = {};
  propagator.inject(trace.setSpan(context.active(), span), headers, defaultTextMapSetter);
  span.end();
  return { spanContext: span.spanContext(), headers };
}

function randomHex(length: number): string {
  return [...crypto.getRandomValues(new Uint8Array(length / 2))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** The ledger's CloudEvents headers. */
const cloudEvent = (id: string) => ({ ce_specversion: "1.0", ce_id: id, ce_type: "ledger.account.credited" });

/** The modules the member loaded (file URLs) and the module that loaded each. */
function loadedModules(file: string): Map<string, string | undefined> {
  return new Map(
    Object.entries(JSON.parse(readFileSync(file, "utf8")) as Record<string, string | undefined>),
  );
}

/** The @opentelemetry packages among `modules`, by name (`api`, `sdk-trace`, ...). */
function openTelemetryPackages(modules: Map<string, string | undefined>): Set<string> {
  const names = new Set<string>();
  for (const url of modules.keys()) {
    const match = /\/node_modules\/@opentelemetry\/([^/]+)\//.exec(url);
    if (match !== null) names.add(match[1]!);
  }
  return names;
}

/** The env without OTEL_* variables, so a developer's own settings cannot turn tracing on here. */
function envWithoutOtel(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("OTEL_")));
}

it("links a record's producer span to the transaction span that applied it, with the messaging attributes and the PostgreSQL statements as child spans; replay and dead-letters retry are spans, the retry linked to the original producer span", async () => {
  const receiver = await startOtlpReceiver();
  onTestFinished(() => receiver.close());
  const topic = uniqueName("traced");
  const dlqTopic = uniqueName("traced-dlq");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  await stack.admin.createTopic(dlqTopic, 1);
  const good = producerSpan(topic);
  const bad = producerSpan(topic);
  await produceRecords(testKafka(), topic, [
    {
      key: "a",
      value: JSON.stringify({ account: "acc-traced", amount: 5 }),
      headers: { ...cloudEvent(`${topic}-1`), ...good.headers },
    },
    { key: "a", value: "not json", headers: { ...cloudEvent(`${topic}-2`), ...bad.headers } },
  ]);
  const loaded = join(tmpdir(), `${uniqueName("loaded")}.json`);
  const run = startCliInTest(
    ["run", "--projection", "ledger", "--topic", topic, "--group", group],
    {
      DATABASE_URL: stack.db.url,
      KAFKA_BROKERS: BROKERS.join(","),
      REPLAYABLE_DLQ_TOPIC: dlqTopic,
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: "ledger-consumer",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      LOADED_MODULES_FILE: loaded,
    },
    { command: MEMBER, baseEnv: envWithoutOtel() },
  );

  const linkedTo = (producer: SpanContext) => (s: ReceivedSpan) =>
    s.links.some((l) => l.traceId === producer.traceId && l.spanId === producer.spanId);
  const [applied, deadLettered] = await waitFor("the transaction spans linked to both producer spans", () => {
    const spans = receiver.spans();
    const a = spans.find(linkedTo(good.spanContext));
    const d = spans.find(linkedTo(bad.spanContext));
    return a !== undefined && d !== undefined ? [a, d] : undefined;
  });

  // The transaction span: the messaging conventions for batch consumption, and our counts.
  expect(applied.name).toBe(`process ${topic}`);
  expect(applied.kind).toBe(SPAN_KIND.consumer);
  expect(applied.scope).toBe("replayable");
  expect(applied.parentSpanId).toBeUndefined();
  expect(applied.attributes).toMatchObject({
    "messaging.system": "kafka",
    "messaging.system.name": "kafka",
    "messaging.operation.type": "process",
    "messaging.operation.name": "process",
    "messaging.destination.name": topic,
    "messaging.destination.partition.id": "0",
    "messaging.consumer.group.name": group,
    "messaging.kafka.offset": 0,
    "kafka.offset": 0,
    "replayable.projection": "ledger",
  });
  expect(applied.resource).toMatchObject({
    "service.name": "ledger-consumer",
    "deployment.environment.name": "test",
  });
  const link = applied.links.find((l) => l.spanId === good.spanContext.spanId)!;
  expect(link.traceState).toBe("vendor=test");
  expect(link.attributes).toMatchObject({ "kafka.offset": 0 });

  // Both records in one transaction or in two: together they applied one, dead-lettered one.
  const transactions = applied === deadLettered ? [applied] : [applied, deadLettered];
  const sum = (name: string) => transactions.reduce((n, s) => n + Number(s.attributes[name]), 0);
  expect(sum("messaging.batch.message_count")).toBe(2);
  expect(sum("replayable.records.applied")).toBe(1);
  expect(sum("replayable.records.dead_lettered")).toBe(1);
  expect(sum("replayable.records.duplicates")).toBe(0);
  expect(transactions.at(-1)!.attributes["replayable.offset.last"]).toBe(1);
  expect(transactions.at(-1)!.attributes["replayable.checkpoint"]).toBe("2");

  // The dead letter: an event with its error code on the span of the transaction that wrote it.
  const event = deadLettered.events.find((e) => e.name === "replayable.dead_letter");
  expect(event?.attributes).toMatchObject({
    "replayable.error.code": "DECODE_FAILED",
    "error.type": "DECODE_FAILED",
    "kafka.offset": 1,
  });
  expect(ERROR_CODES).toContain(event?.attributes["replayable.error.code"]);

  // The statements: CLIENT spans under the transaction span, BEGIN first and COMMIT last.
  const statements = receiver
    .spans()
    .filter((s) => s.parentSpanId === applied.spanId)
    .sort((a, b) => a.name.localeCompare(b.name));
  expect(statements.length).toBeGreaterThanOrEqual(4);
  for (const statement of statements) {
    expect(statement.traceId).toBe(applied.traceId);
    expect(statement.kind).toBe(SPAN_KIND.client);
    expect(statement.attributes).toMatchObject({
      "db.system.name": "postgresql",
      "db.namespace": stack.db.name,
      "server.address": "127.0.0.1",
    });
    expect(statement.attributes["db.query.text"]).toEqual(expect.any(String));
  }
  const names = new Set(statements.map((s) => s.name));
  expect(names).toContain("BEGIN");
  expect(names).toContain("COMMIT");
  expect(names).toContain("INSERT");
  expect(statements.some((s) => /replayable\.checkpoints/.test(String(s.attributes["db.query.text"])))).toBe(
    true,
  );

  // The DLQ record keeps the original record's trace context.
  const [published] = await waitFor("the dead letter on the DLQ topic", async () => {
    const records = await readTopic(testKafka(), dlqTopic);
    return records.length === 1 ? records : undefined;
  });
  expect(published!.headers.traceparent).toEqual([Buffer.from(bad.headers.traceparent!)]);
  expect(published!.headers.tracestate).toEqual([Buffer.from("vendor=test")]);

  await waitForCaughtUp(stack.admin, group, topic);
  run.signal("SIGTERM");
  expect((await run.exited).code).toBe(0);
  // Commands are spans too: a replay, and a dead letter's retry linked to its original producer span.
  const tracedCli = {
    DATABASE_URL: stack.db.url,
    KAFKA_BROKERS: BROKERS.join(","),
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  };
  const cli = { baseEnv: envWithoutOtel() };
  const replayed = await runCli(
    ["replay", "--projection", "ledger", "--group", group, "--topic", topic, "--to-earliest", "--execute"],
    tracedCli,
    cli,
  );
  expect(replayed.code, replayed.stderr).toBe(0);
  const replay = receiver.spans().find((s) => s.name === "replayable replay");
  expect(replay?.kind).toBe(SPAN_KIND.internal);
  expect(replay?.attributes).toMatchObject({
    "replayable.projection": "ledger",
    "replayable.execute": true,
    "replayable.reset": "to-earliest",
    "replayable.outcome": "executed",
    "messaging.consumer.group.name": group,
  });
  const retried = await runCli(
    ["dead-letters", "retry", "--projection", "ledger", "--execute"],
    tracedCli,
    cli,
  );
  expect(retried.code, retried.stderr).toBe(1); // still not JSON: failed again
  const command = receiver.spans().find((s) => s.name === "replayable dead-letters retry");
  const retry = receiver
    .spans()
    .find((s) => s.parentSpanId === command?.spanId && s.name === `process ${topic}`);
  expect(retry?.kind).toBe(SPAN_KIND.consumer);
  expect(retry?.links.map((l) => [l.traceId, l.spanId])).toEqual([
    [bad.spanContext.traceId, bad.spanContext.spanId],
  ]);
  expect(retry?.attributes).toMatchObject({
    "replayable.dead_letter.id": "1",
    "replayable.outcome": "failed",
    "replayable.error.code": "DECODE_FAILED",
    "kafka.offset": 1,
  });
  expect(receiver.spans().some((s) => s.parentSpanId === retry?.spanId && s.kind === SPAN_KIND.client)).toBe(
    true,
  );
  // Regression: a retry stopped by an error (here a lock timeout on the letter's row, which another
  // session holds) ends its command span with the error status (review finding).
  const holder = await stack.db.pool.connect();
  try {
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM replayable.dead_letters WHERE projection = 'ledger' FOR UPDATE");
    const stopped = await runCli(
      ["dead-letters", "retry", "--projection", "ledger", "--execute"],
      { ...tracedCli, REPLAYABLE_LOCK_TIMEOUT_MS: "500" },
      cli,
    );
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain("lock timeout");
  } finally {
    await holder.query("ROLLBACK");
    holder.release();
  }
  const commands = receiver.spans().filter((s) => s.name === "replayable dead-letters retry");
  expect(commands.map((c) => c.statusCode)).toEqual([0, 2]);

  // The recorder sees the SDK when tracing is on, so the test below can fail.
  const packages = openTelemetryPackages(loadedModules(loaded));
  for (const name of ["sdk-trace", "exporter-trace-otlp-http", "resources", "core"])
    expect(packages, name).toContain(name);
});

it("loads no OpenTelemetry SDK module with tracing off: only @opentelemetry/api, which prom-client loads", async () => {
  const receiver = await startOtlpReceiver();
  onTestFinished(() => receiver.close());
  const topic = uniqueName("untraced");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  await produceRecords(testKafka(), topic, [
    {
      key: "a",
      value: JSON.stringify({ account: "acc-untraced", amount: 1 }),
      headers: { ...cloudEvent(`${topic}-1`), ...producerSpan(topic).headers },
    },
  ]);
  const loaded = join(tmpdir(), `${uniqueName("loaded")}.json`);
  const run = startCliInTest(
    ["run", "--projection", "ledger", "--topic", topic, "--group", group],
    {
      DATABASE_URL: stack.db.url,
      KAFKA_BROKERS: BROKERS.join(","),
      // Where spans would go, were tracing on: nothing may arrive.
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      LOADED_MODULES_FILE: loaded,
    },
    { command: MEMBER, baseEnv: envWithoutOtel() },
  );
  await waitForCaughtUp(stack.admin, group, topic);
  run.signal("SIGTERM");
  expect((await run.exited).code).toBe(0);

  const modules = loadedModules(loaded);
  const src = (path: string) => new URL(`../../../src/${path}`, import.meta.url).href;
  // The recorder saw the member's own modules, ES modules and CommonJS.
  expect(modules.has(src("engine/consumerService.ts"))).toBe(true);
  expect(modules.has(src("tracing/tracing.ts"))).toBe(true);
  expect([...modules.keys()].some((url) => url.includes("/node_modules/pg/lib/client.js"))).toBe(true);
  // Nothing of the SDK: no exporter, no span processor, no resource, no propagator, not our spans.
  expect([...modules.keys()].filter((url) => url.startsWith(src("tracing/otel/")))).toEqual([]);
  expect(openTelemetryPackages(modules)).toEqual(new Set(["api"]));
  // The API is there because prom-client's process CPU metric requires it (exemplars), not us.
  const apiLoaders = new Set(
    [...modules]
      .filter(([url]) => url.includes("/node_modules/@opentelemetry/api/"))
      .map(([, parent]) => parent ?? "")
      .filter((parent) => !parent.includes("/node_modules/@opentelemetry/api/")),
  );
  expect([...apiLoaders].map((parent) => parent.replace(/^.*\/node_modules\//, ""))).toEqual([
    "prom-client/lib/metrics/processCpuTotal.js",
  ]);
  expect(receiver.requests()).toBe(0);
});
