/**
 * Regression (issue 25's fault suite, `brokerSilent` on KAFKA_CLIENT=platformatic with KIP-848
 * groups: the group stayed behind for over two minutes with one broker silent). @platformatic/kafka
 * 2.12.1 sends each metadata lookup to the first bootstrap broker first (`kGetBootstrapConnection`
 * rotates only on the retries of one lookup). With that broker silent (half-open), every metadata
 * refresh waited a request timeout there before trying the next broker, and every fetch of the
 * member, on every broker, waits for the refresh it shares (the library's fetch reads the metadata
 * first): all partitions stalled for a request timeout at each refresh. The patch
 * (patches/README.md, "@platformatic+kafka+2.12.1+001+failed-broker-last.patch") makes the connection pool try a broker
 * whose connection failed or whose request (not a JoinGroup or SyncGroup) timed out, with no
 * response since, after the others
 * (the one that failed longest ago first), as the Java client's `NetworkClient.leastLoadedNode`
 * prefers nodes that are not in reconnect backoff.
 *
 * A real broker, directly and behind fault proxies; 1 s request timeout, no retries, so one lookup
 * tries one broker.
 */
import { createServer } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { Broker, Connection, ConnectionPool } from "@platformatic/kafka";
import { loadPlatformaticKafka } from "../../../src/kafka/platformatic/loadClient.js";
import { FaultProxy } from "../../helpers/faultProxy.js";
import { BROKERS } from "../../helpers/stack.js";

const cleanups: (() => Promise<unknown>)[] = [];

/** The patched pool's order of bootstrap lookups (patches/README.md); its types do not declare it. */
type PatchedPool = ConnectionPool & { brokersByHealth(brokers: Broker[]): Broker[] };

/** The pool's connection to `broker` sends ApiVersions; resolves when it answers, rejects when it times out (after the connection closed). */
async function ask(
  lib: Awaited<ReturnType<typeof loadPlatformaticKafka>>,
  pool: ConnectionPool,
  broker: Broker,
): Promise<void> {
  const connection: Connection = await pool.get(broker);
  const closed = new Promise((resolve) => connection.once("close", resolve));
  try {
    await lib.apiVersionsV3.api.async(connection, "platformatic-bootstrap-test", "1.0.0");
  } catch (error) {
    await closed;
    throw error;
  }
}
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a bootstrap broker whose request timed out is tried after the others by the next metadata lookup", async () => {
  const broker = BROKERS[0] ?? "127.0.0.1:9092";
  const [host = "127.0.0.1", port] = broker.split(":");
  const silent = await FaultProxy.start({ target: { host, port: Number(port) }, name: "silent-broker" });
  cleanups.push(() => silent.close());
  silent.setMode("silent");

  const lib = await loadPlatformaticKafka();
  const admin = new lib.Admin({
    clientId: "platformatic-bootstrap-test",
    bootstrapBrokers: [`127.0.0.1:${silent.port}`, broker],
    requestTimeout: 1000,
    retries: 0,
  });
  cleanups.push(() => admin.close());

  // The first lookup goes to the first bootstrap broker, the silent one, and times out.
  await expect(admin.metadata({ topics: [] })).rejects.toThrow(/timed out/i);
  expect(silent.connections()).toHaveLength(1);

  // Without the patch this lookup went to the silent broker again and timed out as well.
  const metadata = await admin.metadata({ topics: [], forceUpdate: true });
  expect(metadata.brokers.size).toBeGreaterThan(0);
  expect(silent.connections()).toHaveLength(1);
});

it("a response clears a broker's mark, an error code included, and marked brokers are tried the one that failed longest ago first", async () => {
  const broker = BROKERS[0] ?? "127.0.0.1:9092";
  const [host = "127.0.0.1", port] = broker.split(":");
  const proxies = await Promise.all(
    ["a", "b"].map((name) =>
      FaultProxy.start({ target: { host, port: Number(port) }, name: `broker-${name}` }),
    ),
  );
  for (const proxy of proxies) cleanups.push(() => proxy.close());
  const [a, b] = proxies.map((proxy) => ({ host: "127.0.0.1", port: proxy.port }));
  const [proxyA, proxyB] = proxies;
  if (!a || !b || !proxyA || !proxyB) throw new Error("two proxies expected");

  const lib = await loadPlatformaticKafka();
  const pool = new lib.ConnectionPool("platformatic-bootstrap-test", { requestTimeout: 1000 }) as PatchedPool;
  cleanups.push(() => pool.close());

  // B fails first, then A: with both marked, B (the older failure) is tried first. Without the
  // ordering, every broker marked meant the list's own order (A first).
  proxyA.setMode("silent");
  proxyB.setMode("silent");
  await expect(ask(lib, pool, b)).rejects.toThrow(/timed out/i);
  await expect(ask(lib, pool, a)).rejects.toThrow(/timed out/i);
  expect(pool.brokersByHealth([a, b])).toEqual([b, a]);
  expect(pool.brokersByHealth([b, a])).toEqual([b, a]);

  // A (the newer failure) answers again, with an error code (a heartbeat of a group that does not
  // exist): its mark is cleared, so it comes first and B, still marked, last. Without the
  // clearing B stayed first (the older mark).
  proxyA.setMode("pass");
  const connection = await pool.get(a);
  await expect(
    lib.heartbeatV4.api.async(connection, "platformatic-bootstrap-no-such-group", 1, "no-such-member", null),
  ).rejects.toThrow(/error/i);
  expect(pool.brokersByHealth([a, b])).toEqual([a, b]);
  expect(pool.brokersByHealth([b, a])).toEqual([a, b]);

  // B answers too: the list's own order, whichever it is.
  proxyB.setMode("pass");
  await ask(lib, pool, b);
  expect(pool.brokersByHealth([a, b])).toEqual([a, b]);
  expect(pool.brokersByHealth([b, a])).toEqual([b, a]);
});

it("a refused connect marks the broker; a JoinGroup that times out does not (the coordinator holds it for the other members)", async () => {
  const broker = BROKERS[0] ?? "127.0.0.1:9092";
  const [host = "127.0.0.1", port] = broker.split(":");
  const silent = await FaultProxy.start({ target: { host, port: Number(port) }, name: "join-silent" });
  cleanups.push(() => silent.close());
  const refused = { host: "127.0.0.1", port: await closedPort() };
  const joining = { host: "127.0.0.1", port: silent.port };
  const direct = { host, port: Number(port) };

  const lib = await loadPlatformaticKafka();
  const pool = new lib.ConnectionPool("platformatic-bootstrap-test", { requestTimeout: 1000 }) as PatchedPool;
  cleanups.push(() => pool.close());

  await expect(pool.get(refused)).rejects.toThrow();
  expect(pool.brokersByHealth([refused, direct])).toEqual([direct, refused]);

  silent.setMode("silent");
  const connection = await pool.get(joining);
  const closed = new Promise((resolve) => connection.once("close", resolve));
  await expect(
    lib.joinGroupV9.api.async(
      connection,
      "platformatic-bootstrap-join",
      10_000,
      60_000,
      "",
      null,
      "consumer",
      [],
      "",
    ),
  ).rejects.toThrow(/timed out/i);
  await closed;
  expect(pool.brokersByHealth([joining, direct])).toEqual([joining, direct]);
});

/** A local TCP port that nothing listens on: bound once, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}
