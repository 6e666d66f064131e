/**
 * The KafkaJS this checkout runs carries the patches in patches/ (npm ci's postinstall applies
 * them), and the start-up check recognises it. The check runs the patched functions on a fetch
 * response built in memory: no broker.
 */
import { expect, it } from "vitest";
import { assertKafkajsPatched } from "../../src/kafka/kafkajsPatches.js";

it("finds patches 001 (aborted transactions), 002 (compacted empty batch), 003 (lanes and generations), 005 (fetch limits), 006 (commit generation), 007 (record headers), 008 (request timeout) and 013 (broker health) in the installed KafkaJS", async () => {
  await expect(assertKafkajsPatched()).resolves.toBeUndefined();
});
