/**
 * OpenTelemetry traces, off by default (docs/observability.md). This file is the engine's and the
 * CLI's only view of tracing: the {@link Tracing} interface and {@link startTracing}, which loads
 * the OpenTelemetry code (src/tracing/otel/) with a dynamic `import()` only when tracing is on:
 * OTEL_TRACES_EXPORTER=otlp, or a tracer provider the library user passes. When it is off, no
 * OpenTelemetry SDK module is loaded, and the transaction path checks one `undefined`.
 * Imports of `@opentelemetry/*` here are type-only (erased); ESLint keeps it so.
 */
import type { TracerProvider } from "@opentelemetry/api";
import type pg from "pg";
import type { Logger } from "pino";
import type { BatchResult } from "../engine/applyBatch.js";
import type { KafkaRecord } from "../record.js";

/** What the span of one dedupe-then-effect transaction is about. */
export interface TransactionSpanInput {
  readonly topic: string;
  readonly partition: number;
  /** The consumer group (`messaging.consumer.group.name`). */
  readonly groupId: string;
  /** The projection's name (`replayable.projection`). */
  readonly projection: string;
  /** The transaction's records, in offset order; their `traceparent` headers become span links. */
  readonly records: readonly KafkaRecord[];
  /** The last offset the transaction covers (`replayable.offset.last`). */
  readonly throughOffset: string;
}

/** What the span of a `dead-letters retry` of one letter is about. */
export interface DeadLetterRetrySpanInput {
  /** The dead letter's id (decimal string). */
  readonly id: string;
  /** The projection's name. */
  readonly projection: string;
  /** The dead-lettered record as stored: its `traceparent` header links the span to its producer. */
  readonly record: KafkaRecord;
}

/** The attribute values a command span takes. */
export type SpanAttributeValue = string | number | boolean;

/** A command span's attributes; undefined values are left out. */
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue | undefined>>;

/** Adds attributes to the span of the command running (a no-op without tracing). */
export type Annotate = (attributes: SpanAttributes) => void;

/**
 * The spans replayable makes. Every method runs `work` inside its span, ends the span when `work`
 * settles (an error is recorded on it, status ERROR, and rethrown) and returns what `work` did.
 */
export interface Tracing {
  /**
   * The span of one dedupe-then-effect transaction (`process <topic>`, kind CONSUMER, the messaging
   * semantic conventions for batch consumption), its links to the records' producer spans, an event
   * per dead letter; `work` gets `client` back with each query traced as a child span.
   */
  transaction(
    input: TransactionSpanInput,
    client: pg.PoolClient,
    work: (client: pg.PoolClient) => Promise<BatchResult>,
  ): Promise<BatchResult>;
  /**
   * The span of one dead letter's retry (`process <topic>`, kind CONSUMER), linked to the span
   * that produced the original record; its queries are child spans. The outcome's `kind` becomes
   * `replayable.outcome`, a failure's `code` `replayable.error.code`.
   */
  deadLetterRetry<T extends { readonly kind: string; readonly code?: string }>(
    input: DeadLetterRetrySpanInput,
    client: pg.PoolClient,
    work: (client: pg.PoolClient) => Promise<T>,
  ): Promise<T>;
  /**
   * The span of a CLI command (`replayable replay`, `rebuild`, `promote`, ...), kind INTERNAL;
   * `work` may add attributes to it (its outcome) through `annotate`.
   */
  command<T>(name: string, attributes: SpanAttributes, work: (annotate: Annotate) => Promise<T>): Promise<T>;
  /**
   * Exports the spans still buffered and, for the SDK replayable started itself, shuts it down; a
   * tracer provider the library user passed is left running (it is theirs). Never throws: a
   * failure is logged.
   */
  shutdown(): Promise<void>;
}

/** Options of {@link startTracing}. */
export interface StartTracingOptions {
  /** Config.tracesExporter: `otlp` starts the SDK with the OTLP/HTTP exporter. */
  readonly tracesExporter: "otlp" | "none";
  /** The library user's own provider: used as it is, whatever `tracesExporter` says. */
  readonly tracerProvider?: TracerProvider | undefined;
  readonly log: Pick<Logger, "warn" | "info">;
}

/**
 * The tracing of a member or a command; undefined when tracing is off (no tracer provider and
 * `tracesExporter` is `none`), in which case nothing of OpenTelemetry was loaded. With `otlp`, the
 * SDK is started with a batch span processor and the OTLP/HTTP exporter, configured by the
 * standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES, ...); call {@link Tracing.shutdown} at the end to export the last spans.
 * @example
 * const tracing = await startTracing({ tracesExporter: config.tracesExporter, log });
 * const result = tracing === undefined ? await run() : await tracing.command("replay", {}, run);
 * await tracing?.shutdown();
 */
export async function startTracing(options: StartTracingOptions): Promise<Tracing | undefined> {
  if (options.tracerProvider !== undefined) {
    const { createTracing } = await import("./otel/spans.js");
    return createTracing(options.tracerProvider, options.log);
  }
  if (options.tracesExporter === "none") return undefined;
  const [{ startSdk }, { createTracing }] = await Promise.all([
    import("./otel/sdk.js"),
    import("./otel/spans.js"),
  ]);
  const sdk = startSdk();
  options.log.info({ serviceName: sdk.serviceName }, "exporting traces (OTLP)");
  return createTracing(sdk.tracerProvider, options.log, () => sdk.shutdown());
}

/**
 * The attributes of a command's outcome: `replayable.outcome` (its kind: dry-run, executed,
 * refused, switched, ...) and, for a refusal, `replayable.refusal.reason`.
 */
export function outcomeAttributes(outcome: {
  readonly kind: string;
  readonly reason?: string;
}): SpanAttributes {
  return { "replayable.outcome": outcome.kind, "replayable.refusal.reason": outcome.reason };
}

/**
 * Runs a CLI command inside its span (`replayable <name>`, docs/observability.md): starts tracing
 * when Config.tracesExporter says so, runs `work` in the span, then exports the spans and stops the
 * SDK. Without tracing, `work` runs as it is (`tracing` undefined, `annotate` a no-op) and nothing
 * of OpenTelemetry is loaded. For replay, rebuild, promote and `dead-letters retry`.
 */
export async function inCommandSpan<T>(
  options: Omit<StartTracingOptions, "tracerProvider">,
  name: string,
  attributes: SpanAttributes,
  work: (tracing: Tracing | undefined, annotate: Annotate) => Promise<T>,
): Promise<T> {
  const tracing = await startTracing(options);
  if (tracing === undefined) return work(undefined, () => undefined);
  try {
    return await tracing.command(name, attributes, (annotate) => work(tracing, annotate));
  } finally {
    await tracing.shutdown();
  }
}
