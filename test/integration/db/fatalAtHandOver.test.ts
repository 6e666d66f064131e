/**
 * Regression (tester's report): a member died with "Unhandled 'error' event" (SQLSTATE 57P01)
 * while PostgreSQL's backends were being terminated. A new connection's ReadyForQuery and the
 * server's FATAL can arrive in one socket read; node-postgres parses both in one go, and pg-pool
 * hands the client over (removing its idle "error" listener) between the two messages, before the
 * caller can attach a listener of its own: the FATAL is emitted on a client without one, which
 * throws. Here a proxy in front of the real server appends a FATAL to the first ReadyForQuery of a
 * connection. createPool keeps an "error" listener on every client; the error still reaches the
 * caller, whose next query fails.
 */
import net from "node:net";
import { expect, it, onTestFinished } from "vitest";
import { createPool } from "../../../src/db/pool.js";
import { useStack } from "../../helpers/stack.js";

const stack = useStack();

/** A backend message (PostgreSQL protocol, "Message Formats"): type byte, int32 length, body. */
function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, "latin1");
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/** ErrorResponse FATAL 57P01, as pg_terminate_backend makes the server send it. */
const FATAL = message(
  "E",
  Buffer.from("SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0", "latin1"),
);
/** ReadyForQuery, idle: the end of the start-up exchange. */
const READY = message("Z", Buffer.from("I", "latin1"));

/** A TCP proxy to the test server that appends {@link FATAL} to each connection's first ReadyForQuery. */
async function fatalAfterReadyProxy(): Promise<{ port: number; close(): Promise<void> }> {
  const target = new URL(stack.db.url);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let injected = false;
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => {
      if (!injected && chunk.subarray(chunk.length - READY.length).equals(READY)) {
        injected = true;
        client.write(Buffer.concat([chunk, FATAL]));
        upstream.end();
        return;
      }
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

it("a FATAL read with a new connection's ReadyForQuery fails the caller's query instead of crashing the process", async () => {
  const proxy = await fatalAfterReadyProxy();
  onTestFinished(() => proxy.close());
  const url = new URL(stack.db.url);
  url.host = `127.0.0.1:${proxy.port}`;
  const idleErrors: Error[] = [];
  const pool = createPool({ connectionString: url.toString(), max: 1 }, (error) => idleErrors.push(error));
  onTestFinished(() => pool.end());

  const client = await pool.connect();
  await expect(client.query("SELECT 1")).rejects.toThrow(/not queryable|terminat/);
  client.release(true);
  expect(idleErrors).toEqual([]);
});
