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
 * {@link FaultProxy.setModeWhere} gives the connections a rule matches a mode of their own, open
 * ones and new ones (e.g. one member process's connections silent, another's passing).
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

/**
 * What a test knows of one accepted connection, for {@link FaultProxy.setModeWhere}: which client
 * (process) it belongs to is found from `clientPort`, the client's own local port (e.g. in the
 * member process's sockets, test/helpers/faultCluster.ts `processOwnsPort`).
 */
export interface ConnectionInfo {
  /** 1, 2, ... in the order the proxy accepted the connections. */
  readonly id: number;
  /** The client's port of the connection (the accepted socket's remote port). */
  readonly clientPort: number;
}

/** A rule of {@link FaultProxy.setModeWhere}: connections that `match` follow `mode`. */
interface Rule {
  readonly match: (connection: ConnectionInfo) => boolean;
  readonly mode: FaultMode;
}

/** One accepted connection: the client's socket and the proxy's socket to the target. */
interface Pair {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  readonly info: ConnectionInfo;
  /** Set by {@link FaultProxy.silenceOpenConnections}: silent for good, whatever the proxy's mode. */
  silenced: boolean;
  /** The mode of the first rule of {@link FaultProxy.setModeWhere} that matched it, if any. */
  ruled: FaultMode | undefined;
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
  private rules: Rule[] = [];
  private accepted = 0;
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
    this.currentMode = this.checkedMode(mode);
    for (const pair of this.pairs) if (pair.ruled === undefined) this.apply(pair);
  }

  /**
   * Every connection open now (or only those that `match`) goes silent for good: it never forwards
   * again and is never closed (until {@link close}), whatever the mode later; new connections follow
   * {@link mode}.
   */
  silenceOpenConnections(match?: (connection: ConnectionInfo) => boolean): void {
    for (const pair of this.pairs) if (match === undefined || match(pair.info)) pair.silenced = true;
  }

  /** The connections open now (silenced ones included), in the order they were accepted. */
  connections(): ConnectionInfo[] {
    return [...this.pairs].map((pair) => pair.info);
  }

  /**
   * From now on, every open connection that `match`es, and every new one that does when it is
   * accepted, follows `mode` instead of {@link mode} (those {@link silenceOpenConnections} silenced
   * stay silent): e.g. one client process's connections silent while another's pass. A rule set
   * earlier wins over a later one for a connection both match. `"reset"` resets the matching open
   * ones now. {@link clearRules} and {@link restore} end every rule.
   * @throws Error when `mode` is a latency that is not a number >= 0.
   */
  setModeWhere(match: (connection: ConnectionInfo) => boolean, mode: FaultMode): void {
    const frozen = this.checkedMode(mode);
    this.rules.push({ match, mode: frozen });
    for (const pair of this.pairs) {
      if (pair.ruled !== undefined || !match(pair.info)) continue;
      pair.ruled = frozen;
      this.apply(pair);
    }
  }

  /** Ends every rule of {@link setModeWhere}: those connections follow {@link mode} again. */
  clearRules(): void {
    this.rules = [];
    for (const pair of this.pairs) {
      if (pair.ruled === undefined) continue;
      pair.ruled = undefined;
      this.apply(pair);
    }
  }

  /**
   * Same as `setMode("pass")` after {@link clearRules}: new connections work again (silenced ones
   * stay silent).
   */
  restore(): void {
    this.rules = [];
    for (const pair of this.pairs) pair.ruled = undefined;
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
    return pair.silenced ? "silent" : (pair.ruled ?? this.currentMode);
  }

  /** `mode`, checked and frozen. */
  private checkedMode(mode: FaultMode): FaultMode {
    if (typeof mode === "object" && !(Number.isFinite(mode.latencyMs) && mode.latencyMs >= 0))
      throw new Error(`fault proxy ${this.name}: latencyMs must be a number >= 0, got ${mode.latencyMs}`);
    return typeof mode === "object" ? Object.freeze({ latencyMs: mode.latencyMs }) : mode;
  }

  /** Acts on an open connection whose effective mode changed: a reset now, or the close it missed. */
  private apply(pair: Pair): void {
    if (pair.silenced) return;
    const mode = this.effectiveMode(pair);
    if (mode === "reset") this.reset(pair);
    else if (mode !== "silent" && (pair.client.destroyed || pair.upstream.destroyed)) this.destroy(pair);
  }

  private accept(client: net.Socket): void {
    if (this.closing !== undefined) {
      client.destroy();
      return;
    }
    client.on("error", () => undefined);
    const info: ConnectionInfo = Object.freeze({ id: ++this.accepted, clientPort: client.remotePort ?? 0 });
    const ruled = this.rules.find((rule) => rule.match(info))?.mode;
    if ((ruled ?? this.currentMode) === "reset") {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    upstream.on("error", () => undefined);
    const pair: Pair = { client, upstream, info, silenced: false, ruled, timers: new Set() };
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
