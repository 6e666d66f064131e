/**
 * Where the three-node cluster of the `faults` tests listens, and the environment that makes
 * `scripts/kafka/kafka.sh` (KAFKA_NODES=3) run it. No imports, so vitest.config.ts can use it.
 *
 * Node i (1..3): client listener on {@link FAULT_CLIENT_PORT}+i-1, which it advertises as
 * {@link FAULT_PROXY_PORT}+i-1 (a {@link FaultProxy} in the test process forwards there);
 * inter-broker traffic on an INTERNAL listener at {@link FAULT_INTERNAL_PORT}+i-1, which also
 * serves the tests' own admin clients and producers, so a fault between the member and a broker
 * leaves the rest of the cluster, and the test's view of it, alone.
 */

/** Number of nodes (combined KRaft broker + controller, node.id 1..3). */
export const FAULT_NODES = 3;
/** First client port (node 1), where the proxies forward to. */
export const FAULT_CLIENT_PORT = 29092;
/** First KRaft controller port. */
export const FAULT_CONTROLLER_PORT = 29192;
/** First INTERNAL (inter-broker) port; the tests' admin clients bootstrap here too. */
export const FAULT_INTERNAL_PORT = 29292;
/** First proxy port: what the nodes advertise to clients of the client listener. */
export const FAULT_PROXY_PORT = 29392;

/** The environment for `scripts/kafka/kafka.sh` to act on the faults cluster (data in <repo>/.data/kafka-faults). */
export const FAULT_CLUSTER_ENV: Readonly<Record<string, string>> = {
  KAFKA_NODES: String(FAULT_NODES),
  KAFKA_CLUSTER_PORT: String(FAULT_CLIENT_PORT),
  KAFKA_CLUSTER_CONTROLLER_PORT: String(FAULT_CONTROLLER_PORT),
  KAFKA_CLUSTER_INTERNAL_PORT: String(FAULT_INTERNAL_PORT),
  KAFKA_CLUSTER_ADVERTISED_PORT: String(FAULT_PROXY_PORT),
  KAFKA_CLUSTER_DATA_DIR: new URL("../../.data/kafka-faults", import.meta.url).pathname,
};

/** Bootstrap list of the INTERNAL listeners: direct, never through a proxy (the tests' own clients). */
export const FAULT_DIRECT_BROKERS: readonly string[] = Array.from(
  { length: FAULT_NODES },
  (_, i) => `127.0.0.1:${FAULT_INTERNAL_PORT + i}`,
);

/** Bootstrap list of the proxies: what a member under test is given as KAFKA_BROKERS. */
export const FAULT_PROXY_BROKERS: readonly string[] = Array.from(
  { length: FAULT_NODES },
  (_, i) => `127.0.0.1:${FAULT_PROXY_PORT + i}`,
);
