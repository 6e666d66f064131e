/**
 * REPLAYABLE_DB_POOL_SIZE is the connections for transactions (regression, found by the breaker
 * check: with a pool of 1 the projection's advisory lock held the only connection for the
 * service's lifetime, every transaction timed out waiting for one, and nothing was ever applied).
 */
import { expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { metricOf } from "../../helpers/inProcess.js";
import { produceLedger } from "../../helpers/ledger.js";
import { BROKERS, TEST_CLIENT_ENV, uniqueName, useStack, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

it("REPLAYABLE_DB_POOL_SIZE=1: the member applies every record", async () => {
  const topic = uniqueName("pool1");
  const group = uniqueName("g");
  const stream = await produceLedger(stack.admin, topic, { count: 50, partitions: 1 });
  const service = new ConsumerService({
    config: loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
      REPLAYABLE_DB_POOL_SIZE: "1",
      REPLAYABLE_PARTITIONS_CONCURRENTLY: "1",
    }),
    projection: ledgerProjection,
    log: createLogger("silent"),
    http: false,
  });
  await service.start();
  try {
    await waitForCaughtUp(stack.admin, group, topic, 30_000);
  } finally {
    await service.stop();
  }
  expect(await metricOf(service.metrics, "replayable_records_applied_total")).toBe(stream.events);
});
