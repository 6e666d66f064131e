import { defineConfig } from "vitest/config";
import { CLUSTER_BROKERS } from "./test/helpers/clusterBrokers.js";

/**
 * Four projects: `unit` (pure logic, no services), `integration` (real Kafka with one broker and
 * PostgreSQL), `cluster` (real PostgreSQL and a local three-broker Kafka cluster, for leader
 * changes and broker faults; see test/helpers/cluster.ts) and `security` (real PostgreSQL and one
 * secured broker the run starts itself: TLS, SASL, ACLs; see test/helpers/secureKafka.ts).
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
    ],
  },
});
