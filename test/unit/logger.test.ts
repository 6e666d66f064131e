/**
 * Logged errors stay compact (regression, newcomer report: an idle PostgreSQL connection's error
 * logged the whole pg Client, ~5 KB a line): the `err` serializer keeps the error's message, type,
 * code, stack, causes and plain fields (a ReplayableError's context), and names any other object
 * (a client, a socket, a Buffer) by its class only.
 */
import type { DestinationStream } from "pino";
import { describe, expect, it } from "vitest";
import { ReplayableError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";

class Connection {
  readonly statements = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`s${i}`, "x".repeat(50)]));
}

/**
 * Logs `err` at warn through createLogger; returns the line's `err` field and the length of the
 * line without the stack (stacks are as long as the test runner's call stack).
 */
function logged(err: unknown): { err: Record<string, unknown>; length: number } {
  const lines: string[] = [];
  const out: DestinationStream = { write: (line: string) => void lines.push(line) };
  createLogger("warn", {}, out).warn({ err }, "failed");
  const line = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
  const { stack: _stack, ...rest } = typeof line.err === "object" ? line.err : {};
  return { err: line.err, length: JSON.stringify(rest).length };
}

describe("the err serializer", () => {
  it("keeps message, code, stack and the cause, and names a class instance field by its class", () => {
    const cause = Object.assign(new Error("connection reset"), {
      code: "ECONNRESET",
      socket: new Connection(),
    });
    const error = Object.assign(
      new ReplayableError("DATABASE", "cannot reach PostgreSQL", {
        cause,
        context: { topic: "t", partition: 0, offsets: ["1", "2"] },
      }),
      { connection: new Connection(), payload: Buffer.alloc(4096) },
    );
    const { err, length } = logged(error);
    expect(err).toMatchObject({
      type: "ReplayableError",
      code: "DATABASE",
      message: "cannot reach PostgreSQL: connection reset",
      context: { topic: "t", partition: 0, offsets: ["1", "2"] },
      connection: "[Connection]",
      payload: "[Buffer]",
    });
    expect(err.stack).toContain("caused by: Error: connection reset");
    expect(length).toBeLessThan(512);
  });

  it("compacts an error nested in a field, and class instances inside plain fields", () => {
    const inner = Object.assign(new Error("inner"), { client: new Connection() });
    const { err } = logged(
      Object.assign(new Error("outer"), { originalError: inner, context: { client: new Connection() } }),
    );
    expect(err).toMatchObject({
      message: "outer",
      originalError: { message: "inner", client: "[Connection]" },
      context: { client: "[Connection]" },
    });
    expect(JSON.stringify(err)).not.toContain("x".repeat(50));
  });

  it("leaves a value that is not an error as it is", () => {
    expect(logged("just text").err).toBe("just text");
  });
});
