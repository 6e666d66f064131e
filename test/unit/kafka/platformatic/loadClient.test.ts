/** KAFKA_CLIENT=platformatic on a Node.js the library does not support fails at start with the version needed. */
import { Kafka } from "kafkajs";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { PlatformaticFeed } from "../../../../src/kafka/platformatic/platformaticFeed.js";
import {
  assertPlatformaticPatched,
  loadPlatformaticKafka,
  type PlatformaticKafka,
  supportsPlatformatic,
} from "../../../../src/kafka/platformatic/loadClient.js";

const { Consumer: realConsumer } = await import("@platformatic/kafka");

describe("loading @platformatic/kafka", () => {
  it("supports Node.js 22.22+, 24.6+ and later majors only", () => {
    expect(["v22.15.0", "v22.21.9", "v24.5.0", "v20.20.2"].map(supportsPlatformatic)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(["v22.22.0", "v24.6.0", "v24.22.3", "v26.0.0"].map(supportsPlatformatic)).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it("refuses an older Node.js with CONFIG_INVALID naming KAFKA_CLIENT and the versions needed", async () => {
    await expect(loadPlatformaticKafka("v22.15.0")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringMatching(
        /KAFKA_CLIENT=platformatic.*Node\.js >= 22\.22\.0.*24\.6\.0.*v22\.15\.0/s,
      ) as unknown,
    });
  });

  it("refuses a library without replayable's patches (KAFKA, naming each and patches/README.md) and accepts one with both", () => {
    class Unpatched {}
    class Patched {
      brokersByHealth(): void {}
    }
    // The real Consumer class (patched here by patch 002) and one whose source lacks the patch.
    class UnpatchedConsumer {}
    const lib = (ConnectionPool: unknown, Consumer: unknown = realConsumer) =>
      ({ ConnectionPool, Consumer }) as unknown as PlatformaticKafka;
    expect(() => assertPlatformaticPatched(lib(Unpatched))).toThrow(
      expect.objectContaining({
        code: "KAFKA",
        message: expect.stringMatching(/patches failed-broker-last:.*patches\/README\.md/s) as unknown,
      }),
    );
    expect(() => assertPlatformaticPatched(lib(Patched, UnpatchedConsumer))).toThrow(
      expect.objectContaining({
        code: "KAFKA",
        message: expect.stringMatching(/patches fetch-split-leaders:/) as unknown,
      }),
    );
    expect(() => assertPlatformaticPatched(lib(Patched))).not.toThrow();
  });

  it("regression: accepts the patched library after a minifier renamed its local names (it looked for the name kSplitLeaders; break-it review)", () => {
    class Patched {
      brokersByHealth(): void {}
    }
    // The patched Consumer's source as a minifier leaves it: local names renamed, strings kept.
    const source = Function.prototype.toString.call(realConsumer).replaceAll("kSplitLeaders", "ut");
    // A function whose own source holds that text (Function.prototype.toString is what the check reads).
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    const minified = new Function(`return ${JSON.stringify(source)};`);
    const lib = { ConnectionPool: Patched, Consumer: minified } as unknown as PlatformaticKafka;
    expect(source).not.toContain("kSplitLeaders");
    expect(() => assertPlatformaticPatched(lib)).not.toThrow();
  });

  it("a PlatformaticFeed (the embedded ConsumerService's path) refuses an unpatched library at start, before any request", async () => {
    class Unpatched {}
    // No broker listens on port 1: a request sent would fail with a connection error instead.
    const feed = new PlatformaticFeed({
      kafka: new Kafka({ clientId: "load-client-test", brokers: ["127.0.0.1:1"], retry: { retries: 0 } }),
      brokers: ["127.0.0.1:1"],
      clientId: "load-client-test",
      groupId: "load-client-test",
      topics: ["t"],
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 1_000,
      fetchLimits: { maxBytes: 1 << 20, maxBytesPerPartition: 1 << 20 },
      log: pino({ level: "silent" }),
      load: () => Promise.resolve({ ConnectionPool: Unpatched } as unknown as PlatformaticKafka),
    });
    await expect(feed.start({} as Parameters<PlatformaticFeed["start"]>[0])).rejects.toMatchObject({
      code: "KAFKA",
      message: expect.stringMatching(/failed-broker-last/) as unknown,
    });
  });
});
