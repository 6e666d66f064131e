/**
 * KafkaJS patch 010 (patches/README.md): an idle request queue sets no timer. 2.2.4 scheduled a
 * check of its pending requests after every response even with none pending and no throttling,
 * with a delay of `-1 - Date.now()` ms: Node fires it after 1 ms, and Node.js 24 prints a
 * TimeoutNegativeWarning for each (kafkajs issue #1751), so every member, CLI command and test on
 * the Node.js lines replayable supports wrote warnings to stderr.
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it, vi } from "vitest";

const require = createRequire(import.meta.url);

interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: unknown;
  scheduleCheckPendingRequests(): void;
  destroy(): void;
}
const RequestQueue = require("kafkajs/src/network/requestQueue/index.js") as new (
  options: object,
) => RequestQueue;

const logger = { debug() {}, info() {}, warn() {}, error() {}, namespace: () => logger };

function queue(): RequestQueue {
  return new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: true,
    clientId: "test",
    broker: "127.0.0.1:9092",
    logger,
  });
}

describe("KafkaJS patch 010: the request queue's pending-request timer", () => {
  afterEach(() => vi.restoreAllMocks());

  it("sets no timer when nothing is pending and the queue is not throttled", () => {
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    const q = queue();
    q.scheduleCheckPendingRequests();
    expect(q.throttleCheckTimeoutId).toBeNull();
    expect(setTimeoutSpy).not.toHaveBeenCalled();
  });

  it("still schedules a check with a delay >= 0 when requests are pending or the queue is throttled", () => {
    const delays: number[] = [];
    vi.spyOn(globalThis, "setTimeout").mockImplementation(((_fn: () => void, ms: number) => {
      delays.push(ms);
      return 1 as unknown as NodeJS.Timeout;
    }) as typeof setTimeout);
    const pending = queue();
    pending.pending.push({});
    pending.scheduleCheckPendingRequests();
    const throttled = queue();
    throttled.throttledUntil = Date.now() + 5000;
    throttled.scheduleCheckPendingRequests();
    expect(delays).toHaveLength(2);
    for (const ms of delays) expect(ms).toBeGreaterThan(0);
  });
});
