/**
 * Regression (breaker): a SIGTERM a few ms after start-up stopped the consumer, then the start
 * went on to join the group and left a member behind that held its partitions. stop() during
 * start() must leave no member in the group.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { BROKERS, TEST_CLIENT_ENV, uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

describe("stop during start", () => {
  it("stop() called while start() runs leaves no member in the group", async () => {
    const topic = uniqueName("stop-start");
    const group = uniqueName("g");
    await stack.admin.createTopic(topic, 1);
    const config = loadConfig({
      KAFKA_BROKERS: BROKERS.join(","),
      ...TEST_CLIENT_ENV,
      DATABASE_URL: stack.db.url,
      REPLAYABLE_TOPICS: topic,
      REPLAYABLE_GROUP_ID: group,
    });
    const service = new ConsumerService({
      config,
      projection: ledgerProjection,
      log: createLogger("warn"),
      http: false,
    });
    const starting = service.start().catch(() => undefined);
    await service.stop();
    await starting;
    expect((await service.done).kind).toBe("stopped");
    // Both have settled: a start that went on to join would show up as a member now.
    expect((await stack.admin.describeGroup(group)).members).toEqual([]);
  });
});
