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
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
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
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { ADMIN_DATABASE_URL, BROKERS, waitFor } from "./stack.js";

export { FaultProxy, type ConnectionInfo, type FaultMode } from "./faultProxy.js";
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
  groupCoordinator,
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
  /** The proxy in front of node `nodeId` (1..3), listening on 29392 + nodeId - 1 (+ FAULTS_PORT_OFFSET). */
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

/**
 * The local TCP ports of the sockets process `pid` holds open now (Linux: its socket inodes from
 * /proc/<pid>/fd, their ports from /proc/<pid>/net/tcp and tcp6). Synchronous, so a
 * {@link FaultProxy.setModeWhere} rule can ask it when a connection is accepted: the client's
 * kernel knows the connection's port by then. Empty when the process is gone.
 */
export function processLocalPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // Closed meanwhile.
      }
    }
  } catch {
    return new Set();
  }
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, "utf8");
    } catch {
      continue;
    }
    // Columns: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      const inode = cols[9];
      if (local === undefined || inode === undefined || !inodes.has(inode)) continue;
      ports.add(parseInt(local.slice(local.lastIndexOf(":") + 1), 16));
    }
  }
  return ports;
}

/**
 * The partitions of `topic` a `replayable run` process was assigned at its latest group join, from
 * its last "joined consumer group" log line (LOG_LEVEL info or lower); undefined before any join.
 */
export function lastAssignment(stderr: string, topic: string): number[] | undefined {
  const lines = stderr.split("\n").filter((l) => l.includes('"msg":"joined consumer group"'));
  const last = lines.at(-1);
  if (last === undefined) return undefined;
  const { assignment } = JSON.parse(last) as { assignment?: Record<string, number[]> };
  return [...(assignment?.[topic] ?? [])].sort((a, b) => a - b);
}

/**
 * Waits until the group is Stable with exactly the given member processes, each assigned a share
 * of `topic`'s `partitions` at its latest join, together all of them and none twice: the state in
 * which every member fetches from the leaders of its own partitions.
 * @returns each process's partitions, in the order given.
 */
export async function waitForStableGroup(
  admin: ClusterAdmin,
  group: string,
  topic: string,
  partitions: number,
  members: readonly { stderr(): string }[],
  timeoutMs = 120_000,
): Promise<number[][]> {
  return waitFor(
    `group ${group} to be Stable with ${members.length} members sharing ${partitions} partitions`,
    async () => {
      const described = await admin.describeGroup(group);
      if (described.state !== "Stable" || described.members.length !== members.length) return undefined;
      const shares = members.map((m) => lastAssignment(m.stderr(), topic) ?? []);
      const all = shares.flat().sort((a, b) => a - b);
      const wanted = Array.from({ length: partitions }, (_, i) => i);
      return shares.every((s) => s.length > 0) && all.join(",") === wanted.join(",") ? shares : undefined;
    },
    timeoutMs,
  );
}
