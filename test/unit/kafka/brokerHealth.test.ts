/**
 * KafkaJS patch 013 (patches/README.md): the broker pool asks the brokers whose connections look
 * unhealthy (a request timed out and nothing answered since, or one has waited a third of its request
 * timeout) for metadata and group coordinators after the others. KafkaJS 2.2.4 picked a random
 * broker, a silent one too, and waited a request timeout there each time: in the fault suite's
 * brokerSilent, a member on KafkaJS caught up 85 s after its leaders moved away from a silent broker
 * (one metadata request and two coordinator lookups sent to it), against 27 s on @platformatic/kafka.
 *
 * KafkaJS's own BrokerPool with stand-in brokers: what is under test is the pool's choice, not a
 * connection (test/integration/kafka/requestTimeout.test.ts drives Connection#suspectSince on a real
 * broker behind a fault proxy).
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);

/** The stand-in for KafkaJS's Broker: what the pool reads of one. */
interface StandInBroker {
  readonly nodeId: string;
  isConnected(): boolean;
  connect(): Promise<void>;
  suspectSince(): number | null;
}
interface BrokerPool {
  brokers: Record<string, StandInBroker>;
  findConnectedBroker(): Promise<StandInBroker>;
  withBroker<T>(callback: (args: { nodeId: string }) => Promise<T>): Promise<T | null>;
}
const BrokerPool = require("kafkajs/src/cluster/brokerPool.js") as new (options: object) => BrokerPool;
/** KafkaJS's Connection, as far as its in-flight requests and patch 013's suspectSince. */
interface KafkajsConnection {
  requestQueue: {
    inflight: Map<number, { sentAt: number; requestTimeout: number; entry: { apiKey: number } }>;
  };
  suspectSince(now?: number): number | null;
}
const Connection = require("kafkajs/src/network/connection.js") as new (options: object) => KafkajsConnection;
const { createLogger, LEVELS } = require("kafkajs/src/loggers/index.js") as {
  createLogger: (options: { level: number; logCreator: () => () => void }) => unknown;
  LEVELS: { NOTHING: number };
};

/** A broker that is connected or connects on demand (or fails to), suspect since `since` (null: healthy). */
function broker(nodeId: string, options: { connected?: boolean; since?: number | null; refuses?: boolean }) {
  let connected = options.connected ?? true;
  return {
    nodeId,
    isConnected: () => connected,
    connect: () => {
      if (options.refuses === true) return Promise.reject(new Error(`broker ${nodeId} refused`));
      connected = true;
      return Promise.resolve();
    },
    suspectSince: () => options.since ?? null,
  };
}

function pool(brokers: StandInBroker[]): BrokerPool {
  const p = new BrokerPool({
    connectionPoolBuilder: {},
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined }),
    retry: { retries: 0 },
  });
  p.brokers = Object.fromEntries(brokers.map((b) => [b.nodeId, b]));
  return p;
}

/** The order in which withBroker tries the brokers (each attempt fails, so it tries them all). */
async function tried(p: BrokerPool): Promise<string[]> {
  const order: string[] = [];
  await p.withBroker(({ nodeId }) => {
    order.push(nodeId);
    return Promise.reject(new Error("next"));
  });
  return order;
}

// KafkaJS shuffles the brokers each time: 60 draws would pick one of three 1 in 3 times each.
const DRAWS = 60;

describe("KafkaJS broker pool: unhealthy brokers last (patch 013)", () => {
  it("regression: asks a connected healthy broker for metadata, never the silent one, while one is left", async () => {
    const p = pool([broker("1", {}), broker("2", { since: 1000 }), broker("3", {})]);
    const chosen = new Set<string>();
    for (let i = 0; i < DRAWS; i++) chosen.add((await p.findConnectedBroker()).nodeId);
    expect([...chosen].sort()).toEqual(["1", "3"]);
  });

  it("connects to a healthy broker rather than use a connected suspect one, and falls back to the suspect one when none connects", async () => {
    const connectable = pool([broker("1", { connected: false }), broker("2", { since: 1000 })]);
    expect((await connectable.findConnectedBroker()).nodeId).toBe("1");
    const refusing = pool([broker("1", { connected: false, refuses: true }), broker("2", { since: 1000 })]);
    expect((await refusing.findConnectedBroker()).nodeId).toBe("2");
  });

  it("regression: tries coordinator lookups on the healthy brokers first, then the suspect ones, the one suspect longest first", async () => {
    const p = pool([
      broker("1", { since: 2000 }),
      broker("2", {}),
      broker("3", { since: 1000 }),
      broker("4", {}),
    ]);
    for (let i = 0; i < DRAWS; i++) {
      const order = await tried(p);
      expect(order.slice(0, 2).sort()).toEqual(["2", "4"]);
      expect(order.slice(2)).toEqual(["3", "1"]);
    }
  });

  it("regression: a JoinGroup or SyncGroup the coordinator holds for the other members does not make the broker suspect; another request waiting a third of its timeout does (break-it review)", () => {
    const connection = new Connection({
      host: "127.0.0.1",
      port: 1,
      logger: createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined }),
      socketFactory: () => undefined,
      requestTimeout: 30_000,
      connectionTimeout: 1000,
    });
    const now = Date.now();
    const inflight = connection.requestQueue.inflight;
    // JoinGroup (11): request timeout rebalance + 5 s, held until the other members join.
    inflight.set(1, { sentAt: now - 40_000, requestTimeout: 65_000, entry: { apiKey: 11 } });
    // SyncGroup (14): held until the group leader sends the assignment.
    inflight.set(2, { sentAt: now - 20_000, requestTimeout: 30_000, entry: { apiKey: 14 } });
    expect(connection.suspectSince(now)).toBeNull();
    // Metadata (3) waiting 20 s of 30.
    inflight.set(3, { sentAt: now - 20_000, requestTimeout: 30_000, entry: { apiKey: 3 } });
    expect(connection.suspectSince(now)).toBe(now - 20_000);
    inflight.clear();
  });
});
