/**
 * The soak's network: one {@link FaultProxy} in front of PostgreSQL and one in front of each
 * broker's client listener, in the runner's process. The members connect only through them (their
 * DATABASE_URL is the PostgreSQL proxy's, and the brokers advertise the proxies' ports:
 * kafka.sh's KAFKA_CLUSTER_ADVERTISED_PORT); the runner's own clients, the CLI commands the
 * nemesis runs and kafka.sh's tools use the brokers' INTERNAL listeners and PostgreSQL directly, so
 * a fault never blinds the checker.
 *
 * The faults, as the nemesis sees them ({@link NetworkFaults}):
 * - `silent`: every connection through the proxy stays open and carries nothing (half-open, as a
 *   NAT or a load balancer that dropped the flow leaves it); healing resets the connections open
 *   then (RST to both ends: the path is back and the old flow is answered with a reset, since a TCP
 *   stream that lost bytes never works again) and lets new ones pass. Not "silent for good": the
 *   proxy's kernel answers PostgreSQL's TCP keepalive for a connection it keeps open, so the
 *   server would keep the backends of such connections, and a dead member's advisory lock with
 *   them, until the proxy closes, and every later `replay`/`rebuild --execute` would be refused
 *   (seen with seed 158); test/faults/ covers "silent for good";
 * - `reset`: open connections get an RST, new ones are reset at once; healing lets new ones pass;
 * - `{ latencyMs }`: every chunk is delivered later.
 */
import { FaultProxy } from "../helpers/faultProxy.js";
import type { NetworkFaults } from "./nemesis.js";

/** Where the brokers listen and what they advertise. */
export interface BrokerPorts {
  /** First client port (node 1): where the proxies forward. */
  readonly clientPort: number;
  /** First advertised port (node 1): where the proxies listen. */
  readonly advertisedPort: number;
  readonly nodes: number;
}

/** The proxies of one soak. */
export interface SoakNetwork {
  /** The database URL for the members: through the PostgreSQL proxy. */
  readonly databaseUrl: string;
  /** The bootstrap list for the members: the broker proxies. */
  readonly brokers: readonly string[];
  readonly faults: NetworkFaults;
  close(): Promise<void>;
}

/**
 * Starts a proxy for PostgreSQL (the server of `databaseUrl`, on an ephemeral port) and one per
 * broker (on the port it advertises).
 * @throws Error when a broker proxy's port is taken (another soak on the same ports).
 */
export async function startNetwork(databaseUrl: string, ports: BrokerPorts): Promise<SoakNetwork> {
  const target = new URL(databaseUrl);
  const proxies = new Map<string, FaultProxy>();
  try {
    proxies.set(
      "postgres",
      await FaultProxy.start({
        target: { host: target.hostname || "127.0.0.1", port: Number(target.port || "5432") },
        name: "postgres",
      }),
    );
    for (let i = 0; i < ports.nodes; i++) {
      proxies.set(
        `broker-${i + 1}`,
        await FaultProxy.start({
          target: { host: "127.0.0.1", port: ports.clientPort + i },
          listenPort: ports.advertisedPort + i,
          name: `broker-${i + 1}`,
        }),
      );
    }
  } catch (error) {
    await Promise.all([...proxies.values()].map((p) => p.close()));
    throw error;
  }
  const proxy = (name: string) => {
    const p = proxies.get(name);
    if (p === undefined) throw new Error(`no fault proxy named ${name}`);
    return p;
  };
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(proxy("postgres").port);
  return {
    databaseUrl: url.toString(),
    brokers: Array.from({ length: ports.nodes }, (_, i) => `127.0.0.1:${ports.advertisedPort + i}`),
    faults: {
      targets: [...proxies.keys()],
      set(name, mode) {
        proxy(name).setMode(mode);
        return Promise.resolve();
      },
      restore(name) {
        const p = proxy(name);
        // A connection that was silent lost bytes: it must never carry data again; both ends learn.
        if (p.mode === "silent") p.setMode("reset");
        p.restore();
        return Promise.resolve();
      },
      openConnections(name) {
        return proxy(name).openConnections;
      },
    },
    async close() {
      await Promise.all([...proxies.values()].map((p) => p.close()));
    },
  };
}
