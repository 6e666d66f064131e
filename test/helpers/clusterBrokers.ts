/**
 * Where the local three-node cluster listens, computed the way `scripts/kafka/kafka.sh` does it
 * with KAFKA_NODES=3 (node i on KAFKA_CLUSTER_PORT + i - 1, default 19092..19094). No imports, so
 * vitest.config.ts can use it to point the `cluster` project's KAFKA_BROKERS at the cluster.
 */

/** Number of nodes (combined KRaft broker + controller, node.id 1..3) of the test cluster. */
export const CLUSTER_NODES = 3;

/** First client port of the cluster (node 1); KAFKA_CLUSTER_PORT, default 19092. */
export const CLUSTER_FIRST_PORT = Number(process.env.KAFKA_CLUSTER_PORT ?? "19092");

/** The cluster's bootstrap list, `127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094` by default. */
export const CLUSTER_BROKERS: readonly string[] = Array.from(
  { length: CLUSTER_NODES },
  (_, i) => `127.0.0.1:${CLUSTER_FIRST_PORT + i}`,
);
