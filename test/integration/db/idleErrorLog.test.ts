/**
 * Regression (newcomer report): the warning "idle PostgreSQL connection failed; the pool replaces
 * it" was about 5 KB a line, because pino's standard `err` serializer copies every enumerable field
 * of an error and node-postgres's pool sets `err.client` (the whole pg Client, with its connection
 * parameters and every prepared statement) on the error of an idle client. Here a real idle
 * client's connection is terminated by the server (SQLSTATE 57P01) and the error is logged as the
 * consumer logs it. createPool hides `client` from serializers (so a caller's own pino logger
 * prints it compactly too); createLogger's `err` serializer names any other such object by class.
 */
import type { DestinationStream } from "pino";
import { expect, it, onTestFinished } from "vitest";
import { createPool } from "../../../src/db/pool.js";
import { createLogger } from "../../../src/logger.js";
import { useStack, waitFor } from "../../helpers/stack.js";

const stack = useStack();

/** A pino destination keeping each line. */
function sink(): DestinationStream & { lines: string[] } {
  const lines: string[] = [];
  return { lines, write: (line: string) => void lines.push(line) };
}

it("an idle connection's error is logged compactly: message, code and stack, not the pg Client", async () => {
  let idleError: Error | undefined;
  const pool = createPool({ connectionString: stack.db.url, max: 1 }, (error) => (idleError = error));
  onTestFinished(() => pool.end());
  const client = await pool.connect();
  // Named statements, as the ledger's batch apply prepares them: the Client keeps each one.
  for (let i = 0; i < 20; i++)
    await client.query({ name: `statement_${i}`, text: `SELECT $1::int + ${i} AS n`, values: [i] });
  const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  client.release();
  await stack.db.pool.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
  const error = await waitFor("the pool's error event for the idle client", () => idleError);
  // Still there for whoever needs it, but not among the fields a serializer copies (any pino's).
  expect(error).toHaveProperty("client");
  expect(Object.keys(error)).not.toContain("client");

  const out = sink();
  createLogger("warn", {}, out).warn(
    { err: error },
    "idle PostgreSQL connection failed; the pool replaces it",
  );
  expect(out.lines).toHaveLength(1);
  const line = out.lines[0]!;
  const err = (JSON.parse(line) as { err: Record<string, unknown> }).err;
  expect(err).toMatchObject({
    message: expect.stringContaining("terminating connection due to administrator command") as unknown,
    code: "57P01",
    severity: "FATAL",
    stack: expect.stringContaining("terminating connection") as unknown,
  });
  expect(err).not.toHaveProperty("client");
  expect(line).not.toContain("statement_1");
  const { stack: _stack, ...rest } = err;
  expect(JSON.stringify(rest).length).toBeLessThan(1024);
});
