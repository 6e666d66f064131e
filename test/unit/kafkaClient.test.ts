import { describe, expect, it } from "vitest";
import {
  REBALANCE_ERROR_TYPES,
  isRebalanceResponse,
  rebalanceErrorMessages,
} from "../../src/kafka/client.js";

describe("rebalance responses in KafkaJS's log lines", () => {
  it("finds every rebalance error type in KafkaJS's table of protocol errors", () => {
    expect([...rebalanceErrorMessages().keys()].sort()).toEqual([...REBALANCE_ERROR_TYPES].sort());
  });

  it("matches Connection's failed responses with those errors only", () => {
    const message = rebalanceErrorMessages().get("REBALANCE_IN_PROGRESS")!;
    expect(isRebalanceResponse("Connection", { error: message, correlationId: 20 })).toBe(true);
    expect(
      isRebalanceResponse("Connection", { error: rebalanceErrorMessages().get("ILLEGAL_GENERATION") }),
    ).toBe(true);
    expect(isRebalanceResponse("Runner", { error: message })).toBe(false);
    expect(
      isRebalanceResponse("Connection", { error: "This server does not host this topic-partition" }),
    ).toBe(false);
    expect(isRebalanceResponse("Connection", {})).toBe(false);
  });
});
