/**
 * The spans replayable makes ({@link Tracing}), over any tracer provider: the SDK's it started
 * (./sdk.ts) or the library user's. Loaded only by {@link startTracing}'s dynamic `import()`.
 *
 * A transaction's span follows the OpenTelemetry messaging semantic conventions for batch
 * consumption (semconv 1.45, "Messaging spans", "Kafka"): `process <topic>`, kind CONSUMER,
 * `messaging.operation.type=process`, one link per record whose W3C `traceparent` header names a
 * valid producer span. The messaging conventions are still in development: the names they
 * deprecated for `messaging.system.name` and `kafka.offset` (`messaging.system`,
 * `messaging.kafka.offset`) are set as well, as most backends and instrumentations still read
 * them. PostgreSQL statements are child spans (./tracedQueries.ts).
 */
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import type pg from "pg";
import type { Logger } from "pino";
import type { BatchResult } from "../../engine/applyBatch.js";
import { errorMessage } from "../../errors.js";
import { headerText, type KafkaRecord } from "../../record.js";
import type { DeadLetterRetrySpanInput, SpanAttributes, Tracing, TransactionSpanInput } from "../tracing.js";
import { traceQueries } from "./tracedQueries.js";

/** The largest offset a double holds exactly. */
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * An offset (a decimal string, 64-bit) as an attribute value: a number, as the messaging
 * conventions type `messaging.kafka.offset`, while it is exact in a double (at most 2^53 - 1);
 * the decimal string beyond, never a rounded number.
 */
export function offsetAttribute(offset: string): number | string {
  // 15 digits are always below 2^53; only longer offsets pay for a BigInt.
  return offset.length <= 15 || BigInt(offset) <= MAX_EXACT ? Number(offset) : offset;
}

/** The instrumentation scope of replayable's spans. */
export const TRACER_NAME = "replayable";

/**
 * Attribute names of the messaging conventions, copied rather than imported from
 * `@opentelemetry/semantic-conventions/incubating`, as that package advises for attributes still
 * in development. Ours are under `replayable.`.
 */
export const ATTR = {
  messagingSystem: "messaging.system",
  messagingSystemName: "messaging.system.name",
  operationType: "messaging.operation.type",
  operationName: "messaging.operation.name",
  destination: "messaging.destination.name",
  partition: "messaging.destination.partition.id",
  consumerGroup: "messaging.consumer.group.name",
  batchCount: "messaging.batch.message_count",
  messagingKafkaOffset: "messaging.kafka.offset",
  kafkaOffset: "kafka.offset",
  projection: "replayable.projection",
  lastOffset: "replayable.offset.last",
  checkpoint: "replayable.checkpoint",
  applied: "replayable.records.applied",
  duplicates: "replayable.records.duplicates",
  offsetDuplicates: "replayable.records.duplicates.offset",
  eventIdDuplicates: "replayable.records.duplicates.event_id",
  deadLettered: "replayable.records.dead_lettered",
  /** Statements of the transaction not made spans: savepoints, and those past MAX_STATEMENT_SPANS. */
  statementsUntraced: "replayable.statements.untraced",
  deadLetterId: "replayable.dead_letter.id",
  errorCode: "replayable.error.code",
  errorMessage: "replayable.error.message",
  outcome: "replayable.outcome",
} as const;

/** The name of the event a dead-lettered record adds to its transaction's span. */
export const DEAD_LETTER_EVENT = "replayable.dead_letter";

const propagator = new W3CTraceContextPropagator();

/** Reads a record's headers as a propagation carrier (the first value of each, as UTF-8). */
const recordHeaders: TextMapGetter<KafkaRecord> = {
  keys: (record) => Object.keys(record.headers),
  get: (record, key) => headerText(record, key),
};

/**
 * The {@link Tracing} over `tracerProvider`; `shutdown` is called by {@link Tracing.shutdown}
 * (the SDK's; absent for a provider the library user owns, which is only flushed if it can be).
 */
export function createTracing(
  tracerProvider: TracerProvider,
  log: Pick<Logger, "warn">,
  shutdown?: () => Promise<void>,
): Tracing {
  const tracer = tracerProvider.getTracer(TRACER_NAME);
  return {
    transaction: (input, client, work) => transactionSpan(tracer, input, client, work),
    deadLetterRetry: (input, client, work) => deadLetterRetrySpan(tracer, input, client, work),
    command: (name, attributes, work) =>
      inSpan(
        tracer,
        `replayable ${name}`,
        { kind: SpanKind.INTERNAL, attributes: defined(attributes) },
        (span) => work((more) => span.setAttributes(defined(more))),
      ),
    async shutdown() {
      try {
        if (shutdown !== undefined) await shutdown();
        else await (tracerProvider as Partial<{ forceFlush(): Promise<void> }>).forceFlush?.();
      } catch (error) {
        log.warn({ err: error }, "exporting the last spans failed");
      }
    },
  };
}

/** The span of one dedupe-then-effect transaction, with its queries as children. */
async function transactionSpan(
  tracer: Tracer,
  input: TransactionSpanInput,
  client: pg.PoolClient,
  work: (client: pg.PoolClient) => Promise<BatchResult>,
): Promise<BatchResult> {
  const { topic, partition, records } = input;
  const first = records[0]?.offset;
  const attributes: Attributes = {
    ...messagingAttributes(topic, partition, input.groupId),
    [ATTR.batchCount]: records.length,
    [ATTR.projection]: input.projection,
    [ATTR.lastOffset]: offsetAttribute(input.throughOffset),
  };
  if (first !== undefined) {
    attributes[ATTR.messagingKafkaOffset] = offsetAttribute(first);
    attributes[ATTR.kafkaOffset] = offsetAttribute(first);
  }
  const links = producerLinks(records);
  return inSpan(
    tracer,
    `process ${topic}`,
    { kind: SpanKind.CONSUMER, attributes, links },
    async (span, ctx) => {
      const result = await withTracedQueries(client, tracer, ctx, work);
      const { offset, event_id } = result.duplicates;
      span.setAttributes({
        [ATTR.applied]: result.applied,
        [ATTR.duplicates]: offset + event_id,
        [ATTR.offsetDuplicates]: offset,
        [ATTR.eventIdDuplicates]: event_id,
        [ATTR.deadLettered]: result.deadLettered.length,
        [ATTR.checkpoint]: result.checkpoint,
      });
      for (const letter of result.deadLettered) {
        span.addEvent(DEAD_LETTER_EVENT, {
          [ATTR.errorCode]: letter.code,
          [ATTR_ERROR_TYPE]: letter.code,
          [ATTR.errorMessage]: letter.message,
          [ATTR.deadLetterId]: letter.id,
          [ATTR.kafkaOffset]: offsetAttribute(letter.record.offset),
          [ATTR.messagingKafkaOffset]: offsetAttribute(letter.record.offset),
        });
      }
      return result;
    },
  );
}

/** The span of one dead letter's retry: linked to the original record's producer span. */
function deadLetterRetrySpan<T extends { readonly kind: string; readonly code?: string }>(
  tracer: Tracer,
  input: DeadLetterRetrySpanInput,
  client: pg.PoolClient,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const { record } = input;
  const attributes: Attributes = {
    ...messagingAttributes(record.topic, record.partition, undefined),
    [ATTR.messagingKafkaOffset]: offsetAttribute(record.offset),
    [ATTR.kafkaOffset]: offsetAttribute(record.offset),
    [ATTR.projection]: input.projection,
    [ATTR.deadLetterId]: input.id,
  };
  const links = producerLinks([record]);
  return inSpan(
    tracer,
    `process ${record.topic}`,
    { kind: SpanKind.CONSUMER, attributes, links },
    async (span, ctx) => {
      const outcome = await withTracedQueries(client, tracer, ctx, work);
      span.setAttribute(ATTR.outcome, outcome.kind);
      if (outcome.code !== undefined) span.setAttribute(ATTR.errorCode, outcome.code);
      return outcome;
    },
  );
}

/** The messaging attributes every consumer span of replayable has. */
function messagingAttributes(topic: string, partition: number, groupId: string | undefined): Attributes {
  const attributes: Attributes = {
    [ATTR.messagingSystem]: "kafka",
    [ATTR.messagingSystemName]: "kafka",
    [ATTR.operationType]: "process",
    [ATTR.operationName]: "process",
    [ATTR.destination]: topic,
    [ATTR.partition]: String(partition),
  };
  if (groupId !== undefined) attributes[ATTR.consumerGroup] = groupId;
  return attributes;
}

/**
 * One link per record whose `traceparent` header (and `tracestate`, kept in the link's span
 * context) names a valid span: the producer's. Each link carries the record's offset. A malformed
 * header is skipped, as the W3C propagator does. Span limits apply: the SDK keeps the first
 * OTEL_SPAN_LINK_COUNT_LIMIT links (default 128) of a larger batch.
 */
export function producerLinks(records: readonly KafkaRecord[]): Link[] {
  const links: Link[] = [];
  for (const record of records) {
    if (!Object.hasOwn(record.headers, "traceparent")) continue;
    const spanContext = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, record, recordHeaders));
    if (spanContext === undefined || !trace.isSpanContextValid(spanContext)) continue;
    links.push({
      context: spanContext,
      attributes: {
        [ATTR.kafkaOffset]: offsetAttribute(record.offset),
        [ATTR.messagingKafkaOffset]: offsetAttribute(record.offset),
      },
    });
  }
  return links;
}

/** Runs `work` with `client`'s queries traced as children of `ctx`, inside `ctx`. */
async function withTracedQueries<T>(
  client: pg.PoolClient,
  tracer: Tracer,
  ctx: Context,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const restore = traceQueries(client, tracer, ctx);
  try {
    return await context.with(ctx, () => work(client));
  } finally {
    const untraced = restore();
    if (untraced > 0) trace.getSpan(ctx)?.setAttribute(ATTR.statementsUntraced, untraced);
  }
}

/**
 * Starts a span (child of the active context), runs `work` with it and its context, and ends it;
 * an error thrown is recorded (an `exception` event, status ERROR, `error.type`) and rethrown.
 */
async function inSpan<T>(
  tracer: Tracer,
  name: string,
  options: { kind: SpanKind; attributes: Attributes; links?: Link[] },
  work: (span: Span, ctx: Context) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, options, context.active());
  const ctx = trace.setSpan(context.active(), span);
  try {
    return await context.with(ctx, () => work(span, ctx));
  } catch (error) {
    recordError(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Records `error` on `span`: its exception event, status ERROR and `error.type` (its code, else its class). */
export function recordError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : new Error(errorMessage(error)));
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  span.setAttribute(ATTR_ERROR_TYPE, errorType(error));
}

/** A low-cardinality name of `error`: a ReplayableError's code, a PostgreSQL SQLSTATE, else the class name. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code !== "") return code;
  return error instanceof Error ? error.constructor.name : "_OTHER";
}

/** `attributes` without its undefined values. */
function defined(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) out[name] = value;
  return out;
}
