import { pino } from "pino";
import { describe, expect, it } from "vitest";
import {
  REBALANCE_ERROR_TYPES,
  createKafka,
  isRebalanceResponse,
  isRetriedResponse,
  rebalanceErrorMessages,
} from "../../src/kafka/client.js";

/** KafkaJS's logger, as `Kafka#logger()` returns it (typed as far as the test uses it). */
interface KafkajsLogger {
  namespace(name: string): { error(message: string, extra?: Record<string, unknown>): void };
}

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

describe("attempts of requests KafkaJS retries, in its log lines", () => {
  /** The pino levels of the lines a KafkaJS logger of `createKafka` wrote for `log`. */
  function levelsOf(log: (kafkaLogger: KafkajsLogger) => void): number[] {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    log(createKafka({ brokers: ["127.0.0.1:1"], clientId: "t", log: logger }).logger());
    return lines.map((line) => (JSON.parse(line) as { level: number }).level);
  }

  it("routes a produce attempt that met a leader move to debug, and keeps other errors", () => {
    // A topic just created (or a leader just moved): KafkaJS logs each attempt at error level,
    // refreshes its metadata and sends again; a `produce` that succeeded printed error lines.
    const notLeader = "This server is not the leader for that topic-partition";
    expect(
      levelsOf((k) => {
        k.namespace("Connection").error("Response Produce(key: 0, version: 7)", { error: notLeader });
        k.namespace("Producer").error(`Failed to send messages: ${notLeader}`, {
          retryCount: 0,
          retryTime: 201,
        });
        k.namespace("Connection").error("Response FindCoordinator", {
          error: "The group coordinator is not available",
        });
      }),
    ).toEqual([]);
    expect(
      levelsOf((k) => {
        k.namespace("Producer").error("Failed to send messages: Topic authorization failed", {
          retryCount: 0,
        });
        k.namespace("Connection").error("Response Produce", { error: "Topic authorization failed" });
      }),
    ).toEqual([50, 50]);
    expect(isRetriedResponse("Producer", `Failed to send messages: ${notLeader}`, {})).toBe(false);
  });
});
