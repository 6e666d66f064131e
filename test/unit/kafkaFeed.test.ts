import { describe, expect, it } from "vitest";
import { isKafkaUnavailable } from "../../src/kafka/kafkaFeed.js";

/** A KafkaJS error's shape: name, retriable, type, cause. */
function kafkaError(name: string, fields: { retriable?: boolean; type?: string; cause?: unknown } = {}) {
  return Object.assign(new Error(name), { name, ...fields });
}

describe("isKafkaUnavailable: restart the consumer (never end the process) for these", () => {
  it.each([
    ["a connection refused", kafkaError("KafkaJSConnectionError", { retriable: true })],
    ["no broker answering", kafkaError("KafkaJSNoBrokerAvailableError", { retriable: true })],
    [
      "the coordinator not found (KafkaJS calls it non-retriable)",
      kafkaError("KafkaJSGroupCoordinatorNotFound", { retriable: false }),
    ],
    ["a lock timeout (non-retriable in KafkaJS)", kafkaError("KafkaJSLockTimeout", { retriable: false })],
    ["retries exhausted", kafkaError("KafkaJSNumberOfRetriesExceeded", { retriable: false })],
    [
      "a non-retriable wrapper of a connection error",
      kafkaError("KafkaJSNonRetriableError", {
        retriable: false,
        cause: kafkaError("KafkaJSConnectionError", { retriable: true }),
      }),
    ],
    [
      "a retriable protocol error",
      kafkaError("KafkaJSProtocolError", { retriable: true, type: "COORDINATOR_LOAD_IN_PROGRESS" }),
    ],
  ])("%s", (_name, error) => {
    expect(isKafkaUnavailable(error)).toBe(true);
  });

  it.each([
    [
      "a session timeout the broker refuses",
      kafkaError("KafkaJSProtocolError", { retriable: false, type: "INVALID_SESSION_TIMEOUT" }),
    ],
    [
      "an authorization failure",
      kafkaError("KafkaJSProtocolError", { retriable: false, type: "GROUP_AUTHORIZATION_FAILED" }),
    ],
    ["a bug", new TypeError("x is undefined")],
  ])("but not %s", (_name, error) => {
    expect(isKafkaUnavailable(error)).toBe(false);
  });
});
