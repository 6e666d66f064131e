/**
 * The OpenTelemetry SDK that replayable starts when OTEL_TRACES_EXPORTER=otlp: a tracer provider
 * with a batch span processor and the OTLP/HTTP exporter, registered as the global one (with an
 * AsyncLocalStorage context manager and the W3C trace context propagator), so spans a projection
 * makes through `@opentelemetry/api` nest under its transaction's span. Loaded only by
 * {@link startTracing}'s dynamic `import()` (src/tracing/tracing.ts): nothing here is loaded when
 * tracing is off.
 *
 * The exporter reads the standard variables itself: OTEL_EXPORTER_OTLP_ENDPOINT (default
 * http://localhost:4318) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_EXPORTER_OTLP_TIMEOUT, and the provider OTEL_TRACES_SAMPLER and the span limits
 * (OTEL_SPAN_LINK_COUNT_LIMIT, ...); the resource is OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
 * over `service.name=replayable` (docs/observability.md).
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";

/** The service name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
export const DEFAULT_SERVICE_NAME = "replayable";

/** A started SDK. */
export interface Sdk {
  readonly tracerProvider: TracerProvider;
  /** The resource's `service.name`. */
  readonly serviceName: string;
  /** Exports the buffered spans, then stops the exporter. */
  shutdown(): Promise<void>;
}

/** Starts the SDK and registers it globally (see the file's comment). */
export function startSdk(): Sdk {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: DEFAULT_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  const tracerProvider = new TracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  const serviceName = resource.attributes[ATTR_SERVICE_NAME];
  return {
    tracerProvider,
    serviceName: typeof serviceName === "string" ? serviceName : DEFAULT_SERVICE_NAME,
    async shutdown() {
      await tracerProvider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
