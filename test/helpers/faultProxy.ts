/**
 * A TCP fault proxy for tests, in the test process: the member connects to the proxy, the proxy to
 * the real server (PostgreSQL, a Kafka broker), and a test switches what the network does in
 * between, as Toxiproxy's toxics do (Shopify/toxiproxy: `timeout`, `reset_peer`, `latency`):
 * - `"pass"`: forward both ways, half-closes (FIN) and resets (RST) included;
 * - `"silent"`: a half-open connection as both ends see it: sockets stay open, nothing is delivered
 *   in either direction, not even a close (the server does not see the client give up, the client
 *   does not see the server end the session); new connections are accepted and then carry nothing;
 * - `"reset"`: open connections are reset (RST to both ends, `socket.resetAndDestroy()`), new ones
 *   are reset as soon as they are accepted;
 * - `{ latencyMs }`: every chunk (and the close that follows them) is delivered `latencyMs` later,
 *   in order.
 *
 * Data sent while a connection is silent is dropped, like packets on a lost network, so a
 * connection that was silent and is forwarded again carries a corrupt stream for any protocol with
 * framing (PostgreSQL, Kafka). Restoring `"pass"` is meant for NEW connections; to model "the old
 * connections never come back, new ones work", call {@link FaultProxy.silenceOpenConnections} and
 * keep (or restore) `"pass"`.
 *
 * Limits, by construction (a user-space proxy, not `tc netem`): TCP keepalive probes are answered
 * by the kernel on either side of the proxy, so keepalive never detects a silent proxy; only a
 * deadline in the application does (a query timeout, a request timeout, a session timeout).
 * A silenced connection holds a socket on each side until {@link FaultProxy.close}.
 */
import net from "node:net";

/** What the proxy does with the bytes of a connection; see the file's comment. */
export type FaultMode = "pass" | "silent" | "reset" | { readonly latencyMs: number };

/** Options of {@link FaultProxy.start}. */
export interface FaultProxyOptions {
  /** The real server the proxy forwards to. */
  readonly target: { readonly host: string; readonly port: number };
  /** Port to listen on (127.0.0.1); 0 or absent: an ephemeral port, read {@link FaultProxy.port}. */
  readonly listenPort?: number;
  /** A name for error messages (e.g. `"broker-2"`, `"postgres"`); default `host:port` of the target. */
  readonly name?: string;
}

/** One accepted connection: the client's socket and the proxy's socket to the target. */
interface Pair {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  /** Set by {@link FaultProxy.silenceOpenConnections}: silent for good, whatever the proxy's mode. */
  silenced: boolean;
  /** Pending delayed deliveries (latency mode), cleared when the pair is destroyed. */
  readonly timers: Set<NodeJS.Timeout>;
}

/**
 * A TCP proxy whose connections can be made silent, reset or slow from a test.
 *
 * @example
 * const pg = await FaultProxy.start({ target: { host: "127.0.0.1", port: 5432 }, name: "postgres" });
 * // DATABASE_URL=postgres://postgres@127.0.0.1:${pg.port}/test for the member
 * pg.silenceOpenConnections(); // its open connections go half-open for good; new ones work
 * await pg.close();
 */
export class FaultProxy {
  private currentMode: FaultMode = "pass";
  private readonly pairs = new Set<Pair>();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: net.Server,
    private readonly target: { readonly host: string; readonly port: number },
    /** Name used in error messages. */
    readonly name: string,
    /** Port the proxy listens on (127.0.0.1): where clients connect. */
    readonly port: number,
  ) {
    server.on("connection", (client) => this.accept(client));
  }

  /**
   * Starts a proxy listening on 127.0.0.1 in mode `"pass"`.
   * @throws Error when the port cannot be bound (EADDRINUSE: another proxy or process holds it).
   */
  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false });
    const name = options.name ?? `${options.target.host}:${options.target.port}`;
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) =>
        reject(
          new Error(`fault proxy ${name}: cannot listen on ${options.listenPort ?? 0}: ${error.message}`, {
            cause: error,
          }),
        );
      server.once("error", onError);
      server.listen(options.listenPort ?? 0, "127.0.0.1", () => {
        server.off("error", onError);
        resolve();
      });
    });
    const address = server.address();
    if (address === null || typeof address === "string")
      throw new Error(`fault proxy ${name}: no TCP address`);
    return new FaultProxy(server, options.target, name, address.port);
  }

  /** The mode that new connections, and open ones not silenced for good, follow now. */
  get mode(): FaultMode {
    return this.currentMode;
  }

  /** Connections accepted and not yet closed on both sides (silenced ones included). */
  get openConnections(): number {
    return this.pairs.size;
  }

  /**
   * Sets the mode of every open connection (except those {@link silenceOpenConnections} silenced
   * for good, which stay silent) and of new ones. `"reset"` resets the open ones now. Leaving
   * `"silent"` does not deliver what was dropped meanwhile; a connection one side of which closed
   * while silent is destroyed on the other side now.
   */
  setMode(mode: FaultMode): void {
    if (typeof mode === "object" && !(Number.isFinite(mode.latencyMs) && mode.latencyMs >= 0))
      throw new Error(`fault proxy ${this.name}: latencyMs must be a number >= 0, got ${mode.latencyMs}`);
    this.currentMode = typeof mode === "object" ? Object.freeze({ latencyMs: mode.latencyMs }) : mode;
    for (const pair of this.pairs) {
      if (pair.silenced) continue;
      if (mode === "reset") this.reset(pair);
      else if (mode !== "silent" && (pair.client.destroyed || pair.upstream.destroyed)) this.destroy(pair);
    }
  }

  /**
   * Every connection open now goes silent for good: it never forwards again and is never closed
   * (until {@link close}), whatever the mode later; new connections follow {@link mode}.
   */
  silenceOpenConnections(): void {
    for (const pair of this.pairs) pair.silenced = true;
  }

  /** Same as `setMode("pass")`: new connections work again (silenced ones stay silent). */
  restore(): void {
    this.setMode("pass");
  }

  /** Stops listening and destroys every connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const pair of this.pairs) this.destroy(pair);
    });
    return this.closing;
  }

  private effectiveMode(pair: Pair): FaultMode {
    return pair.silenced ? "silent" : this.currentMode;
  }

  private accept(client: net.Socket): void {
    if (this.closing !== undefined) {
      client.destroy();
      return;
    }
    client.on("error", () => undefined);
    if (this.currentMode === "reset") {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    upstream.on("error", () => undefined);
    const pair: Pair = { client, upstream, silenced: false, timers: new Set() };
    this.pairs.add(pair);
    this.forward(pair, client, upstream);
    this.forward(pair, upstream, client);
  }

  /** Forwards `from` to `to` as the pair's mode says, chunk by chunk, with FIN and RST. */
  private forward(pair: Pair, from: net.Socket, to: net.Socket): void {
    // Latency keeps the order: one queue per direction, delivered head first, one timer at a time.
    const queue: { readonly at: number; readonly action: () => void }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = () => {
      if (timer !== undefined) pair.timers.delete(timer);
      timer = undefined;
      while (queue.length > 0 && queue[0]!.at <= Date.now()) {
        const { action } = queue.shift()!;
        // Silenced meanwhile: a chunk in flight is lost like the rest.
        if (this.effectiveMode(pair) !== "silent") action();
      }
      const head = queue[0];
      if (head !== undefined) {
        timer = setTimeout(drain, head.at - Date.now());
        pair.timers.add(timer);
      }
    };
    const deliver = (action: () => void) => {
      const mode = this.effectiveMode(pair);
      const delay = typeof mode === "object" ? mode.latencyMs : 0;
      if (delay === 0 && queue.length === 0) {
        action();
        return;
      }
      queue.push({ at: Date.now() + delay, action });
      if (timer === undefined) drain();
    };
    from.on("data", (chunk: Buffer) => {
      if (this.effectiveMode(pair) === "silent") return;
      deliver(() => {
        if (to.destroyed || to.writableEnded) return;
        if (!to.write(chunk)) {
          from.pause();
          to.once("drain", () => from.resume());
        }
      });
    });
    from.on("end", () => {
      if (this.effectiveMode(pair) === "silent") return;
      deliver(() => {
        if (!to.destroyed) to.end();
      });
    });
    from.on("close", (hadError) => {
      if (pair.client.destroyed && pair.upstream.destroyed) {
        this.forget(pair);
        return;
      }
      if (this.effectiveMode(pair) === "silent") return;
      deliver(() => {
        if (to.destroyed) return;
        // A reset stays a reset (ECONNRESET at the other end); a close after FIN waits for `to` to end.
        if (hadError) to.resetAndDestroy();
        else if (!from.readableEnded) to.destroy();
      });
    });
  }

  private reset(pair: Pair): void {
    for (const socket of [pair.client, pair.upstream]) {
      if (socket.destroyed) continue;
      // resetAndDestroy needs a connected socket; one still connecting is simply destroyed.
      if (socket.connecting) socket.destroy();
      else socket.resetAndDestroy();
    }
    this.forget(pair);
  }

  private destroy(pair: Pair): void {
    pair.client.destroy();
    pair.upstream.destroy();
    this.forget(pair);
  }

  private forget(pair: Pair): void {
    for (const timer of pair.timers) clearTimeout(timer);
    pair.timers.clear();
    this.pairs.delete(pair);
  }
}
