import { defineConfig } from "vitest/config";

/** Two projects: `unit` (pure logic, no services) and `integration` (real Kafka and PostgreSQL). */
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
    ],
  },
});
