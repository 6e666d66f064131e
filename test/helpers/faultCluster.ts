/**
 * The fault tests' stage (test/faults/): the three-node cluster of {@link FAULT_CLUSTER_ENV}
 * (started by test/faults/globalSetup.ts) whose nodes advertise the ports of one
 * {@link FaultProxy} per broker, and fault proxies in front of PostgreSQL.
 *
 * The proxies live in the test process (the vitest worker of one file), so a test can switch them;
 * the member processes a test spawns connect through them. Each broker's advertised address
 * answers only while a file's broker proxies run ({@link useBrokerProxies}); the `faults` project
 * runs one file at a time. The tests' own clients (KAFKA_BROKERS of the `faults` project, the
 * helpers of ./cluster.ts: topics, leaders, kills and restarts) bootstrap through the INTERNAL
 * listeners ({@link FAULT_DIRECT_BROKERS}), so a fault never blinds the test itself.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, onTestFinished } from "vitest";
import { FaultProxy } from "./faultProxy.js";
import {
  FAULT_CLIENT_PORT,
  FAULT_CLUSTER_ENV,
  FAULT_DIRECT_BROKERS,
  FAULT_NODES,
  FAULT_PROXY_BROKERS,
  FAULT_PROXY_PORT,
} from "./faultClusterPorts.js";
import { ADMIN_DATABASE_URL, BROKERS } from "./stack.js";

export { FaultProxy, type FaultMode } from "./faultProxy.js";
export {
  FAULT_CLUSTER_ENV,
  FAULT_DIRECT_BROKERS,
  FAULT_NODES,
  FAULT_PROXY_BROKERS,
} from "./faultClusterPorts.js";
// The cluster tools act on the faults cluster in the `faults` project: kafka.sh reads the
// cluster's ports from the environment (FAULT_CLUSTER_ENV) and their admin clients bootstrap
// from KAFKA_BROKERS (FAULT_DIRECT_BROKERS); both set by vitest.config.ts.
export {
  createReplicatedTopic,
  ensureAllBrokersUp,
  killBroker,
  leaderOf,
  liveBrokerIds,
  moveLeader,
  partitionState,
  partitionsByLeader,
  quietKafka,
  reassignPartition,
  restartBroker,
  stopBroker,
  topicState,
  waitForInSync,
  waitForLeaderOff,
  type PartitionState,
} from "./cluster.js";

const execFileAsync = promisify(execFile);
const KAFKA_SH = join(import.meta.dirname, "..", "..", "scripts", "kafka", "kafka.sh");

/**
 * Fails fast when this process is not set up for the faults cluster (a file of test/faults/ run
 * outside the `faults` project): the cluster tools would act on another cluster.
 * @throws Error naming the variable that differs.
 */
export function assertFaultsEnvironment(): void {
  for (const [name, value] of Object.entries(FAULT_CLUSTER_ENV)) {
    if (process.env[name] !== value)
      throw new Error(
        `faults: ${name} is ${process.env[name] ?? "unset"}, not ${value}: run with --project faults`,
      );
  }
  if (BROKERS.join(",") !== FAULT_DIRECT_BROKERS.join(","))
    throw new Error(`faults: KAFKA_BROKERS is ${BROKERS.join(",")}, not ${FAULT_DIRECT_BROKERS.join(",")}`);
}

/**
 * Starts the faults cluster (`kafka.sh up` with {@link FAULT_CLUSTER_ENV}), or finds it running:
 * idempotent. Readiness is checked through the INTERNAL listeners, so no proxy needs to run.
 * @throws Error with kafka.sh's stderr when it fails.
 */
export async function ensureFaultCluster(): Promise<void> {
  try {
    await execFileAsync(KAFKA_SH, ["up"], {
      env: { ...process.env, ...FAULT_CLUSTER_ENV },
      timeout: 300_000,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`kafka.sh up (faults cluster) failed: ${stderr.trim() || String(error)}`, {
      cause: error,
    });
  }
}

/** The broker proxies of one test file, by node id. */
export interface BrokerProxies {
  /** The proxy in front of node `nodeId` (1..3), listening on 29392 + nodeId - 1. */
  brokerProxy(nodeId: number): FaultProxy;
  /** The bootstrap list for a member under test: the proxies ({@link FAULT_PROXY_BROKERS}), joined by commas. */
  readonly bootstrap: string;
}

/**
 * Registers hooks that start one {@link FaultProxy} per broker for the file (beforeAll; proxy i on
 * the port node i advertises, forwarding to node i's client port), put each back in `"pass"` after
 * every test, and close them after the file.
 * @throws Error (in beforeAll) when the environment is not the `faults` project's, or a port is taken.
 */
export function useBrokerProxies(): BrokerProxies {
  const proxies: FaultProxy[] = [];
  beforeAll(async () => {
    assertFaultsEnvironment();
    for (let i = 0; i < FAULT_NODES; i++)
      proxies.push(
        await FaultProxy.start({
          target: { host: "127.0.0.1", port: FAULT_CLIENT_PORT + i },
          listenPort: FAULT_PROXY_PORT + i,
          name: `broker-${i + 1}`,
        }),
      );
  });
  afterEach(() => {
    for (const proxy of proxies) proxy.restore();
  });
  afterAll(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  });
  return {
    brokerProxy(nodeId: number) {
      const proxy = proxies[nodeId - 1];
      if (proxy === undefined)
        throw new Error(`no broker proxy for node ${nodeId} (1..${FAULT_NODES}; started in beforeAll)`);
      return proxy;
    },
    bootstrap: FAULT_PROXY_BROKERS.join(","),
  };
}

/**
 * Starts a {@link FaultProxy} in front of the PostgreSQL server of `databaseUrl` (default: the
 * test server), on an ephemeral port, closed when the current test finishes. Call it inside a test.
 * @returns the proxy and `url`: `databaseUrl` with its host and port replaced by the proxy's.
 */
export async function postgresProxy(
  databaseUrl: string = ADMIN_DATABASE_URL,
): Promise<{ proxy: FaultProxy; url: string }> {
  const target = new URL(databaseUrl);
  const proxy = await FaultProxy.start({
    target: { host: target.hostname || "127.0.0.1", port: Number(target.port || "5432") },
    name: "postgres",
  });
  onTestFinished(() => proxy.close());
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  return { proxy, url: url.toString() };
}
