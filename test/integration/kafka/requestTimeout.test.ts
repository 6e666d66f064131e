/**
 * Regression (issue 25, "The member silent towards the group coordinator": the zombie's rejoin after
 * the heal was unbounded). KafkaJS 2.2.4 kept a connection whose request had timed out: every later
 * request to that broker went to the same half-open connection and timed out in turn, so a member
 * cut off from its group coordinator by a half-open path never rejoined after the path healed, until
 * its consumer ran out of retries and restarted. Patch 008 (patches/README.md) closes the connection
 * on a request timeout, as the Java client does (`NetworkClient` disconnects a node whose request
 * timed out), and the connection pool opens a new one for the next request.
 *
 * A real broker behind a fault proxy; KafkaJS's own connection pool (the one each `Broker` holds),
 * with a 1 s request timeout.
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { FaultProxy } from "../../helpers/faultProxy.js";
import { BROKERS } from "../../helpers/stack.js";

const require = createRequire(import.meta.url);

interface ProtocolRequest {
  readonly request: unknown;
  readonly response: unknown;
}
interface Connection {
  send(protocolRequest: ProtocolRequest): Promise<{ apiVersions: unknown[] }>;
}
interface ConnectionPool {
  send(protocolRequest: ProtocolRequest): Promise<{ apiVersions: unknown[] }>;
  /** The pool's connection `index` (0: every request but Fetch; 1: Fetch), connected. */
  getConnection(index: number): Promise<Connection>;
  destroy(): Promise<void>;
  /** Patch 013: since when the pool's connections look unhealthy, ms since the epoch, or null. */
  suspectSince(): number | null;
}
const ConnectionPool = require("kafkajs/src/network/connectionPool.js") as new (
  options: object,
) => ConnectionPool;
const socketFactory = require("kafkajs/src/network/socketFactory.js") as () => unknown;
const { createLogger, LEVELS } = require("kafkajs/src/loggers/index.js") as {
  createLogger: (options: { level: number; logCreator: () => () => void }) => unknown;
  LEVELS: { NOTHING: number };
};
const apiVersions = require("kafkajs/src/protocol/requests/apiVersions/index.js") as {
  protocol: (options: { version: number }) => () => ProtocolRequest;
};

/** KafkaJS's request timeout for the pool under test (ms). */
const REQUEST_TIMEOUT_MS = 1000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A KafkaJS connection pool to the broker behind `proxy`, as `Broker` makes one. */
function connectionPool(proxy: FaultProxy): ConnectionPool {
  const pool = new ConnectionPool({
    host: "127.0.0.1",
    port: proxy.port,
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined }),
    socketFactory: socketFactory(),
    clientId: "request-timeout-test",
    connectionTimeout: REQUEST_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    enforceRequestTimeout: true,
  });
  cleanups.push(() => pool.destroy());
  return pool;
}

/** A fault proxy in front of the test broker, and a KafkaJS connection pool through it. */
async function proxiedPool(): Promise<{ proxy: FaultProxy; pool: ConnectionPool }> {
  const [host, port] = (BROKERS[0] ?? "127.0.0.1:9092").split(":");
  const proxy = await FaultProxy.start({
    target: { host: host ?? "127.0.0.1", port: Number(port) },
    name: "broker",
  });
  cleanups.push(() => proxy.close());
  return { proxy, pool: connectionPool(proxy) };
}

describe("KafkaJS request timeout (patch 008)", () => {
  it("closes the connection whose request timed out; the next request goes over a new connection", async () => {
    const { proxy, pool } = await proxiedPool();
    const apiVersionsRequest = apiVersions.protocol({ version: 0 });

    const before = await pool.send(apiVersionsRequest());
    expect(before.apiVersions.length).toBeGreaterThan(0);
    const first = proxy.connections().map((connection) => connection.id);
    expect(first).toHaveLength(1);

    // The open connection goes half-open for good; new connections work.
    proxy.silenceOpenConnections();
    await expect(pool.send(apiVersionsRequest())).rejects.toMatchObject({
      name: "KafkaJSRequestTimeoutError",
    });

    // Without the patch this request went to the silent connection and timed out as well.
    const after = await pool.send(apiVersionsRequest());
    expect(after.apiVersions.length).toBeGreaterThan(0);
    const second = proxy
      .connections()
      .map((connection) => connection.id)
      .filter((id) => !first.includes(id));
    expect(second).toHaveLength(1);
  });

  it("patch 013: a request waiting a third of its request timeout makes the pool suspect from its send time; after it timed out, until a response arrives (the broker pool then asks that broker last)", async () => {
    const { proxy, pool } = await proxiedPool();
    const apiVersionsRequest = apiVersions.protocol({ version: 0 });
    await pool.send(apiVersionsRequest());
    expect(pool.suspectSince()).toBeNull();

    proxy.silenceOpenConnections();
    const sentAt = Date.now();
    const waiting = pool.send(apiVersionsRequest());
    const outcome = waiting.then(
      () => "answered",
      (error: Error) => error.name,
    );
    // Suspect once it has waited a third of the request timeout, well before it times out.
    const deadline = Date.now() + REQUEST_TIMEOUT_MS;
    while (pool.suspectSince() === null && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const stalledSince = pool.suspectSince();
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS / 3 - 20);
    expect(stalledSince).not.toBeNull();
    expect(Math.abs(stalledSince! - sentAt)).toBeLessThan(200);

    expect(await outcome).toBe("KafkaJSRequestTimeoutError");
    // Timed out: suspect from the timeout on, with no request waiting any more.
    const timedOutAt = pool.suspectSince();
    expect(timedOutAt).not.toBeNull();
    expect(timedOutAt!).toBeGreaterThanOrEqual(sentAt + REQUEST_TIMEOUT_MS - 50);

    // A response (over the new connection) clears it.
    await pool.send(apiVersionsRequest());
    expect(pool.suspectSince()).toBeNull();
  });

  it("patch 013, regression: a response on any of the broker's connections clears the mark that a timeout on another one set (a broker whose fetch connection once timed out stayed suspect while it answered; break-it review)", async () => {
    const { proxy, pool } = await proxiedPool();
    const apiVersionsRequest = apiVersions.protocol({ version: 0 });
    const general = await pool.getConnection(0);
    await general.send(apiVersionsRequest());
    const opened = proxy.connections().map((connection) => connection.id);
    const fetchLane = await pool.getConnection(1);
    await fetchLane.send(apiVersionsRequest());
    const fetchLaneId = proxy
      .connections()
      .map((connection) => connection.id)
      .find((id) => !opened.includes(id));
    expect(fetchLaneId).toBeDefined();

    // Only the fetch lane's connection goes silent: its request times out and marks the broker.
    proxy.silenceOpenConnections((connection) => connection.id === fetchLaneId);
    await expect(fetchLane.send(apiVersionsRequest())).rejects.toMatchObject({
      name: "KafkaJSRequestTimeoutError",
    });
    expect(pool.suspectSince()).not.toBeNull();
    // The broker answers on its other connection: no longer suspect.
    await general.send(apiVersionsRequest());
    expect(pool.suspectSince()).toBeNull();
  });
});
