/**
 * Regression (found while testing the upsert sink): `ConsumerService.stop()` resolved before
 * PostgreSQL had released the member's shared advisory lock on the projection (a session lock goes
 * only when the backend exits, a moment after the socket closes), so a `replay --execute` or
 * `rebuild` started right after the stop was sometimes refused with PROJECTION_LOCKED.
 */
import { expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { ConsumerService } from "../../../src/engine/consumerService.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { projectionLock, tryAdvisoryLock } from "../../../src/sql/advisoryLocks.js";
import { produceLedger } from "../../helpers/ledger.js";
import { BROKERS, TEST_CLIENT_ENV, uniqueName, useStack, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

it("the projection's exclusive advisory lock can be taken as soon as stop() resolves, every time", async () => {
  const topic = uniqueName("stop-lock");
  await produceLedger(stack.admin, topic, { count: 10, partitions: 1, seed: 2 });
  for (let round = 1; round <= 20; round++) {
    const group = uniqueName("g");
    const service = new ConsumerService({
      config: loadConfig({
        KAFKA_BROKERS: BROKERS.join(","),
        ...TEST_CLIENT_ENV,
        DATABASE_URL: stack.db.url,
        REPLAYABLE_PROJECTION: "ledger",
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
      }),
      projection: ledgerProjection,
      log: createLogger("silent"),
      http: false,
    });
    await service.start();
    await waitForCaughtUp(stack.admin, group, topic);
    await service.stop();
    const client = await stack.db.pool.connect();
    try {
      const locked = await tryAdvisoryLock(client, projectionLock("ledger"), false);
      expect(locked, `round ${round}`).toBe(true);
      await client.query("SELECT pg_advisory_unlock_all()");
    } finally {
      client.release();
    }
  }
});
