/** Running a consumer member in the test process (for tests that need no crash or signal). */
import { expect } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ConsumerService } from "../../src/engine/consumerService.js";
import { createLogger } from "../../src/logger.js";
import type { Metrics } from "../../src/metrics/metrics.js";
import type { Projection } from "../../src/projection.js";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { sumMetric } from "./process.js";
import { BROKERS, waitForCaughtUp, TEST_CLIENT_ENV } from "./stack.js";

/**
 * Runs one in-process member of `group` on `topic` into `databaseUrl` until the group has committed
 * the high watermark of every partition, then stops it gracefully and returns its metrics.
 */
export async function runUntilCaughtUp(
  admin: ClusterAdmin,
  options: {
    projection: Projection<unknown>;
    databaseUrl: string;
    topic: string;
    group: string;
    env?: Record<string, string>;
  },
): Promise<Metrics> {
  const config = loadConfig({
    KAFKA_BROKERS: BROKERS.join(","),
    ...TEST_CLIENT_ENV,
    DATABASE_URL: options.databaseUrl,
    REPLAYABLE_TOPICS: options.topic,
    REPLAYABLE_GROUP_ID: options.group,
    ...options.env,
  });
  const service = new ConsumerService({
    config,
    projection: options.projection,
    log: createLogger("warn"),
    http: false,
  });
  await service.start();
  try {
    await waitForCaughtUp(admin, options.group, options.topic);
  } finally {
    await service.stop();
  }
  expect(await service.done).toEqual({ kind: "stopped" });
  return service.metrics;
}

/** Sums a metric of an in-process member's registry. */
export async function metricOf(
  metrics: Metrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return sumMetric(await metrics.registry.metrics(), name, labels);
}
