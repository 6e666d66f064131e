/**
 * The KafkaJS this checkout runs carries the patches in patches/ (npm ci's postinstall applies
 * them), and the start-up check recognises it. The check runs the patched functions on a fetch
 * response built in memory: no broker.
 */
import { createRequire } from "node:module";
import { expect, it } from "vitest";
import { assertKafkajsPatched } from "../../src/kafka/kafkajsPatches.js";

it("finds patches 001 (aborted transactions), 002 (compacted empty batch), 003 (lanes and generations), 005 (fetch limits), 006 (commit generation), 007 (record headers), 008 (request timeout) and 013 (broker health) in the installed KafkaJS", async () => {
  await expect(assertKafkajsPatched()).resolves.toBeUndefined();
});

it("regression: refuses a KafkaJS whose brokers or connection pools lack patch 013's suspectSince (the check looked at the connection and the broker pool only; break-it review)", async () => {
  const require = createRequire(import.meta.url);
  for (const path of ["kafkajs/src/broker/index.js", "kafkajs/src/network/connectionPool.js"]) {
    const { prototype } = require(path) as { prototype: { suspectSince?: unknown } };
    const patched = prototype.suspectSince;
    delete prototype.suspectSince;
    try {
      await expect(assertKafkajsPatched()).rejects.toMatchObject({
        code: "KAFKA",
        message: expect.stringContaining("013 broker-health") as unknown,
      });
    } finally {
      prototype.suspectSince = patched;
    }
  }
});
