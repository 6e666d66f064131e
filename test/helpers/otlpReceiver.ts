/**
 * An OTLP/HTTP trace receiver for tests: a node:http server that accepts `POST /v1/traces` in the
 * OTLP/JSON encoding (what @opentelemetry/exporter-trace-otlp-http sends), gzip or not, answers
 * 200 as a collector does, and keeps every span with its resource, flattened for assertions.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

/** An attribute value as OTLP/JSON encodes it (`intValue` may be a string: 64-bit). */
interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
  links?: { traceId: string; spanId: string; traceState?: string; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[];
  }[];
}

/** Attribute values as plain JS values: strings, numbers (ints as numbers), booleans, arrays. */
export type Attributes = Record<string, unknown>;

/** One received span, ids as lower-case hex. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Undefined for a root span. */
  readonly parentSpanId: string | undefined;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Attributes;
  readonly events: readonly { readonly name: string; readonly attributes: Attributes }[];
  readonly links: readonly {
    readonly traceId: string;
    readonly spanId: string;
    readonly traceState: string | undefined;
    readonly attributes: Attributes;
  }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly scope: string | undefined;
  readonly resource: Attributes;
}

/** OTLP's span kinds. */
export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** A running receiver. */
export interface OtlpReceiver {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Every span received so far. */
  spans(): readonly ReceivedSpan[];
  /** How many export requests arrived (any path). */
  requests(): number;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1, a port of its own. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server = createServer((request, response) => {
    requests += 1;
    void body(request).then(
      (bytes) => {
        if (request.method !== "POST" || request.url !== "/v1/traces") {
          response.writeHead(404).end();
          return;
        }
        const json = JSON.parse(bytes.toString("utf8")) as ExportRequest;
        spans.push(...flatten(json));
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      },
      () => response.writeHead(400).end(),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => spans,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function body(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  return request.headers["content-encoding"] === "gzip" ? gunzipSync(bytes) : bytes;
}

function flatten(request: ExportRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributes(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        out.push({
          traceId: hexId(span.traceId),
          spanId: hexId(span.spanId),
          parentSpanId: span.parentSpanId ? hexId(span.parentSpanId) : undefined,
          name: span.name,
          kind: span.kind ?? 0,
          attributes: attributes(span.attributes),
          events: (span.events ?? []).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })),
          links: (span.links ?? []).map((l) => ({
            traceId: hexId(l.traceId),
            spanId: hexId(l.spanId),
            traceState: l.traceState || undefined,
            attributes: attributes(l.attributes),
          })),
          statusCode: span.status?.code ?? 0,
          scope: scopeSpans.scope?.name,
          resource,
        });
      }
    }
  }
  return out;
}

/** OTLP/JSON ids are hex; a base64 id (the protobuf JSON mapping) is turned into hex too. */
function hexId(id: string): string {
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16)
    ? id.toLowerCase()
    : Buffer.from(id, "base64").toString("hex");
}

function attributes(list: KeyValue[] | undefined): Attributes {
  const out: Attributes = {};
  for (const { key, value } of list ?? []) out[key] = plain(value);
  return out;
}

function plain(value: AnyValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}
