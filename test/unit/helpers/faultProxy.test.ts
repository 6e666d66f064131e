/**
 * The fault proxy of the `faults` tests (test/helpers/faultProxy.ts), with real sockets on
 * loopback: an echo server behind it, a client in front.
 */
import net from "node:net";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { FaultProxy } from "../../helpers/faultProxy.js";

/** An echo server that keeps its sockets and what they received. */
interface Echo {
  readonly port: number;
  readonly sockets: net.Socket[];
  /** Everything any connection received, as text. */
  received(): string;
  close(): Promise<void>;
}

async function startEcho(): Promise<Echo> {
  const sockets: net.Socket[] = [];
  let received = "";
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
      socket.write(chunk);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    sockets,
    received: () => received,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A client socket that records what it received, its errors and whether it closed. */
interface Client {
  readonly socket: net.Socket;
  received(): string;
  error(): (Error & { code?: string }) | undefined;
  closed(): boolean;
  /** Resolves with the text received once it contains `text`; rejects after `timeoutMs`. */
  read(text: string, timeoutMs: number): Promise<string>;
}

async function connect(port: number): Promise<Client> {
  const socket = net.connect({ host: "127.0.0.1", port });
  let received = "";
  let error: (Error & { code?: string }) | undefined;
  let closed = false;
  socket.on("data", (chunk: Buffer) => (received += chunk.toString("utf8")));
  socket.on("error", (e) => (error = e));
  socket.on("close", () => (closed = true));
  await once(socket, "connect");
  return {
    socket,
    received: () => received,
    error: () => error,
    closed: () => closed,
    read: (text, timeoutMs) =>
      new Promise((resolve, reject) => {
        const deadline = Date.now() + timeoutMs;
        const poll = () => {
          if (received.includes(text)) resolve(received);
          else if (Date.now() > deadline) reject(new Error(`read timed out after ${timeoutMs} ms`));
          else setTimeout(poll, 5);
        };
        poll();
      }),
  };
}

/** Waits until `check` is true, or fails after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("FaultProxy", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup() {
    const echo = await startEcho();
    cleanups.push(() => echo.close());
    const proxy = await FaultProxy.start({ target: { host: "127.0.0.1", port: echo.port }, name: "echo" });
    cleanups.push(() => proxy.close());
    return { echo, proxy };
  }

  it("forwards both ways in pass mode, and a close", async () => {
    const { echo, proxy } = await setup();
    expect(proxy.mode).toBe("pass");
    const client = await connect(proxy.port);
    client.socket.write("hello");
    await client.read("hello", 2_000);
    expect(echo.received()).toBe("hello");
    expect(proxy.openConnections).toBe(1);
    echo.sockets[0]!.end();
    await until("the client to see the server's close", () => client.closed());
    await until("the proxy to forget the connection", () => proxy.openConnections === 0);
  });

  it("delivers nothing in silent mode and keeps both sockets open", async () => {
    const { echo, proxy } = await setup();
    const client = await connect(proxy.port);
    client.socket.write("before");
    await client.read("before", 2_000);
    proxy.setMode("silent");
    client.socket.write("during");
    // A read with a deadline times out; the socket is not closed, no error.
    await expect(client.read("during", 300)).rejects.toThrow(/timed out/);
    expect(echo.received()).toBe("before");
    // The server writes too: nothing reaches the client.
    echo.sockets[0]!.write("from-server");
    await expect(client.read("from-server", 300)).rejects.toThrow(/timed out/);
    expect(client.closed()).toBe(false);
    expect(client.error()).toBeUndefined();
    // Neither end sees the other give up: the server's socket stays open after the client's close.
    client.socket.destroy();
    echo.sockets[0]!.end();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(echo.sockets[0]!.readableEnded).toBe(false);
    expect(proxy.openConnections).toBe(1);
  });

  it("accepts new connections in silent mode and delivers nothing", async () => {
    const { echo, proxy } = await setup();
    proxy.setMode("silent");
    const client = await connect(proxy.port);
    client.socket.write("ping");
    await expect(client.read("ping", 300)).rejects.toThrow(/timed out/);
    expect(echo.received()).toBe("");
    expect(client.closed()).toBe(false);
  });

  it("resets open connections and new ones in reset mode (ECONNRESET)", async () => {
    const { proxy } = await setup();
    const open = await connect(proxy.port);
    open.socket.write("x");
    await open.read("x", 2_000);
    proxy.setMode("reset");
    await until("the open connection to be reset", () => open.closed());
    expect(open.error()?.code).toBe("ECONNRESET");
    expect(proxy.openConnections).toBe(0);
    const fresh = net.connect({ host: "127.0.0.1", port: proxy.port });
    const [error] = (await once(fresh, "error")) as [Error & { code?: string }];
    expect(error.code).toBe("ECONNRESET");
  });

  it("delays every chunk in latency mode, in order", async () => {
    const { proxy } = await setup();
    const client = await connect(proxy.port);
    proxy.setMode({ latencyMs: 150 });
    expect(proxy.mode).toEqual({ latencyMs: 150 });
    const started = Date.now();
    client.socket.write("a");
    client.socket.write("b");
    await client.read("ab", 3_000);
    // Both directions are delayed: at least two latencies for the round trip (timers may fire 1 ms early).
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(client.received()).toBe("ab");
    proxy.restore();
    const again = Date.now();
    client.socket.write("c");
    await client.read("abc", 2_000);
    expect(Date.now() - again).toBeLessThan(150);
  });

  it("silences open connections for good while new ones work", async () => {
    const { echo, proxy } = await setup();
    const old = await connect(proxy.port);
    old.socket.write("1");
    await old.read("1", 2_000);
    proxy.silenceOpenConnections();
    expect(proxy.mode).toBe("pass");
    const fresh = await connect(proxy.port);
    fresh.socket.write("2");
    await fresh.read("2", 2_000);
    old.socket.write("3");
    await expect(old.read("3", 300)).rejects.toThrow(/timed out/);
    // Neither restoring nor a reset brings the silenced one back or closes it.
    proxy.restore();
    proxy.setMode("reset");
    await until("the fresh connection to be reset", () => fresh.closed());
    proxy.restore();
    old.socket.write("4");
    await expect(old.read("4", 300)).rejects.toThrow(/timed out/);
    expect(old.closed()).toBe(false);
    expect(echo.received()).toBe("12");
    expect(proxy.openConnections).toBe(1);
  });

  it("gives the connections a rule matches their own mode, open ones and new ones, until the rules end", async () => {
    const { echo, proxy } = await setup();
    const a = await connect(proxy.port);
    const b = await connect(proxy.port);
    const aPort = a.socket.localPort!;
    expect(proxy.connections().map((c) => c.clientPort)).toEqual([aPort, b.socket.localPort]);
    proxy.setModeWhere((c) => c.clientPort === aPort || c.id === 3, "silent");
    a.socket.write("1");
    b.socket.write("2");
    await b.read("2", 2_000);
    await expect(a.read("1", 300)).rejects.toThrow(/timed out/);
    // A new connection the rule matches (the third accepted) is silent from the start.
    const c = await connect(proxy.port);
    c.socket.write("x");
    await expect(c.read("x", 300)).rejects.toThrow(/timed out/);
    const d = await connect(proxy.port);
    d.socket.write("3");
    await d.read("3", 2_000);
    // The proxy's own mode leaves ruled connections alone; a rule's "reset" resets the matching ones.
    proxy.setMode("silent");
    proxy.setModeWhere((info) => info.clientPort === b.socket.localPort, "reset");
    await until("b to be reset", () => b.closed());
    expect(d.closed()).toBe(false);
    proxy.clearRules();
    proxy.setMode("pass");
    const e = await connect(proxy.port);
    e.socket.write("4");
    await e.read("4", 2_000);
    expect(echo.received().split("").sort().join("")).toBe("234");
    // Once the rules end, a connection they silenced forwards again (what it sent meanwhile is lost).
    proxy.restore();
    c.socket.write("y");
    expect(await c.read("y", 2_000)).toBe("y");
  });

  it("closes every connection on close, idempotently", async () => {
    const { proxy } = await setup();
    const client = await connect(proxy.port);
    proxy.silenceOpenConnections();
    await Promise.all([proxy.close(), proxy.close()]);
    await until("the client to be closed", () => client.closed());
    expect(proxy.openConnections).toBe(0);
    await proxy.close();
  });

  it("listens on a given port", async () => {
    const echo = await startEcho();
    cleanups.push(() => echo.close());
    const first = await FaultProxy.start({ target: { host: "127.0.0.1", port: echo.port } });
    const port = first.port;
    await first.close();
    const proxy = await FaultProxy.start({
      target: { host: "127.0.0.1", port: echo.port },
      listenPort: port,
    });
    cleanups.push(() => proxy.close());
    expect(proxy.port).toBe(port);
    await expect(
      FaultProxy.start({ target: { host: "127.0.0.1", port: echo.port }, listenPort: port, name: "twice" }),
    ).rejects.toThrow(/fault proxy twice: cannot listen/);
  });
});
