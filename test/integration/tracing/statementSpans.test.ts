/**
 * A transaction's statement spans are bounded (break-it review of issue 29): a projection that
 * sends a statement per record made thousands of spans per transaction, more than the SDK's export
 * queue holds, and the transaction's own span, which ends last, was dropped. Savepoints are never
 * spans and at most MAX_STATEMENT_SPANS statements are; the rest are counted. Real PostgreSQL.
 */
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { MAX_STATEMENT_SPANS, traceQueries } from "../../../src/tracing/otel/tracedQueries.js";
import { useStack } from "../../helpers/stack.js";

const stack = useStack();

describe("statement spans of one transaction", () => {
  it("leave out savepoints and stop at MAX_STATEMENT_SPANS, counting the rest", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracer = provider.getTracer("test");
    const parent = tracer.startSpan("process t");
    const client = await stack.db.pool.connect();
    let untraced = -1;
    const restore = traceQueries(client, tracer, trace.setSpan(ROOT_CONTEXT, parent));
    try {
      await client.query("BEGIN");
      for (let i = 0; i < 300; i++) {
        await client.query("SAVEPOINT r");
        await client.query("SELECT $1::int AS i", [i]);
        await client.query("RELEASE SAVEPOINT r");
      }
      await client.query("COMMIT");
    } finally {
      untraced = restore();
      client.release();
    }
    parent.end();
    const statements = exporter.getFinishedSpans().filter((s) => s.name !== "process t");
    expect(statements).toHaveLength(MAX_STATEMENT_SPANS);
    expect(statements.map((s) => s.name)).not.toContain("SAVEPOINT");
    expect(statements.map((s) => s.name)).not.toContain("RELEASE");
    expect(statements[0]!.name).toBe("BEGIN");
    // 600 savepoint statements, and the BEGIN, 300 SELECTs and COMMIT past the first 100.
    expect(untraced).toBe(600 + (302 - MAX_STATEMENT_SPANS));
    await provider.shutdown();
  });
});
