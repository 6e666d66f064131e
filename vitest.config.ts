import { defineConfig } from "vitest/config";
import { CLUSTER_BROKERS } from "./test/helpers/clusterBrokers.js";
import { FAULT_CLUSTER_ENV, FAULT_DIRECT_BROKERS } from "./test/helpers/faultClusterPorts.js";

/**
 * Five projects: `unit` (pure logic, no services), `integration` (real Kafka with one broker and
 * PostgreSQL), `cluster` (real PostgreSQL and a local three-broker Kafka cluster, for leader
 * changes and broker faults; see test/helpers/cluster.ts) and `security` (real PostgreSQL and one
 * secured broker the run starts itself: TLS, SASL, ACLs; see test/helpers/secureKafka.ts) and
 * `faults` (real PostgreSQL and a three-broker cluster of its own whose connections from the member
 * run through fault proxies: silent, reset, latency; see test/helpers/faultCluster.ts).
 */
export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 10_000 } },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          // Each file starts consumer processes of its own; two files at once fit on 2 cores.
          fileParallelism: true,
          maxWorkers: 2,
          globalSetup: ["test/integration/globalSetup.ts"],
        },
      },
      {
        test: {
          name: "cluster",
          include: ["test/cluster/**/*.test.ts"],
          testTimeout: 300_000,
          hookTimeout: 180_000,
          // Three JVMs share the 2 cores with the consumers: one file at a time.
          fileParallelism: false,
          maxWorkers: 1,
          globalSetup: ["test/cluster/globalSetup.ts"],
          // test/helpers/stack.ts reads KAFKA_BROKERS: every helper talks to the cluster.
          env: { KAFKA_BROKERS: CLUSTER_BROKERS.join(",") },
        },
      },
      {
        test: {
          name: "security",
          include: ["test/security/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: true,
          maxWorkers: 2,
          globalSetup: ["test/security/globalSetup.ts"],
        },
      },
      {
        test: {
          name: "faults",
          include: ["test/faults/**/*.test.ts"],
          testTimeout: 300_000,
          hookTimeout: 180_000,
          // The broker proxies listen on fixed ports in each file's process: one file at a time.
          fileParallelism: false,
          maxWorkers: 1,
          globalSetup: ["test/faults/globalSetup.ts"],
          // kafka.sh (through test/helpers/cluster.ts) acts on the faults cluster; the tests' own
          // clients bootstrap through the INTERNAL listeners, never through a proxy.
          env: { ...FAULT_CLUSTER_ENV, KAFKA_BROKERS: FAULT_DIRECT_BROKERS.join(",") },
        },
      },
    ],
  },
});
