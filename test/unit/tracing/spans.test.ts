/**
 * The pure parts of the spans (src/tracing/otel/): the links a transaction's records give, read
 * from their W3C `traceparent`/`tracestate` headers, and the statement names of the query spans.
 */
import { TraceFlags } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { offsetAttribute, producerLinks } from "../../../src/tracing/otel/spans.js";
import { operationName } from "../../../src/tracing/otel/tracedQueries.js";
import { dlqHeaders } from "../../../src/kafka/deadLetterPublisher.js";
import type { KafkaRecord } from "../../../src/record.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";

function record(offset: string, headers: Record<string, (string | null)[]>): KafkaRecord {
  const converted = Object.create(null) as Record<string, (Buffer | null)[]>;
  for (const [name, values] of Object.entries(headers))
    converted[name] = values.map((v) => (v === null ? null : Buffer.from(v)));
  return { topic: "t", partition: 0, offset, timestamp: "0", key: null, value: null, headers: converted };
}

describe("producerLinks", () => {
  it("links each record whose traceparent names a valid span, with its tracestate and offset", () => {
    const links = producerLinks([
      record("7", { traceparent: [`00-${TRACE_ID}-${SPAN_ID}-01`], tracestate: ["vendor=a,other=b"] }),
      record("8", {}),
      record("9", { traceparent: [`00-${TRACE_ID}-${"1".repeat(16)}-00`] }),
    ]);
    expect(links).toHaveLength(2);
    expect(links[0]!.context).toMatchObject({
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: TraceFlags.SAMPLED,
    });
    expect(links[0]!.context.traceState?.serialize()).toBe("vendor=a,other=b");
    expect(links[0]!.attributes).toEqual({ "kafka.offset": 7, "messaging.kafka.offset": 7 });
    expect(links[1]!.context).toMatchObject({ spanId: "1".repeat(16), traceFlags: TraceFlags.NONE });
  });

  it("skips a malformed, all-zero or null traceparent instead of failing the transaction", () => {
    expect(
      producerLinks([
        record("1", { traceparent: ["not a traceparent"] }),
        record("2", { traceparent: [`00-${"0".repeat(32)}-${SPAN_ID}-01`] }),
        record("3", { traceparent: [null] }),
        record("4", { traceparent: [`ff-${TRACE_ID}-${SPAN_ID}-01`] }),
      ]),
    ).toEqual([]);
  });
});

describe("operationName", () => {
  it.each([
    ["BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = 5", "BEGIN"],
    ["  select 1", "SELECT"],
    ["-- a comment\nINSERT INTO t VALUES ($1)", "INSERT"],
    ["/* drizzle */ update t set a = 1", "UPDATE"],
    ["(SELECT 1)", undefined],
  ])("%j is %s", (text, name) => {
    expect(operationName(text)).toBe(name);
  });
});

describe("the DLQ record's trace context", () => {
  it("keeps the record's traceparent and tracestate headers as they were", () => {
    const traced = record("5", { traceparent: [`00-${TRACE_ID}-${SPAN_ID}-01`], tracestate: ["vendor=a"] });
    const headers = dlqHeaders({
      id: "1",
      projection: "p",
      record: traced,
      code: "DECODE_FAILED",
      message: "m",
    });
    expect(headers.traceparent).toEqual([Buffer.from(`00-${TRACE_ID}-${SPAN_ID}-01`)]);
    expect(headers.tracestate).toEqual([Buffer.from("vendor=a")]);
  });
});

describe("offsetAttribute", () => {
  it("is a number while exact in a double, the decimal string beyond (64-bit offsets)", () => {
    expect(offsetAttribute("7")).toBe(7);
    expect(offsetAttribute("9007199254740991")).toBe(9007199254740991);
    expect(offsetAttribute("9007199254740993")).toBe("9007199254740993");
    expect(offsetAttribute("9223372036854775807")).toBe("9223372036854775807");
  });
});
