/**
 * A graceful stop while the group rebalances, waiting for a member that died without leaving (a
 * review, reproduced with the feeds): the stop waits for the rebalance to end (KafkaJS's
 * disconnect waits for its JoinGroup; on @platformatic/kafka the LeaveGroup waits behind the
 * JoinGroup the library sent on the coordinator's connection), and it logged nothing above info
 * until the shutdown timeout ended the process. It now names the step it waits on, at warn, every
 * 5 s; and KafkaJS's feed no longer hands the engine the assignment of a join that completes
 * during the stop (it did, after the engine had drained).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { expect, it, onTestFinished } from "vitest";
import type { FeedListener } from "../../../src/feed.js";
import { createKafka } from "../../../src/kafka/client.js";
import { KafkaFeed } from "../../../src/kafka/kafkaFeed.js";
import { PlatformaticFeed } from "../../../src/kafka/platformatic/platformaticFeed.js";
import { BROKERS, testKafka, uniqueName, useStack, waitFor } from "../../helpers/stack.js";

const stack = useStack();
const FROZEN = fileURLToPath(new URL("../../fixtures/frozenMember/join.mjs", import.meta.url));
/** The dead member's session: the rebalance waits this long after its last heartbeat. */
const FROZEN_SESSION_MS = 20_000;

interface Line {
  level: number;
  msg: string;
  step?: string;
}

it.each(["kafkajs", "platformatic"] as const)(
  "%s: a stop during a rebalance held by a dead member names the step it waits on, and takes no new assignment",
  async (client) => {
    const topic = uniqueName("stoprebalance");
    const groupId = uniqueName("g");
    await stack.admin.createTopic(topic, 4);
    const lines: Line[] = [];
    const log = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l) as Line) });
    const options = {
      // KafkaJS's own log ("The group is rebalancing, re-joining") goes to the same lines.
      kafka: createKafka({ brokers: BROKERS, clientId: "replayable-test", log }),
      groupId,
      topics: [topic],
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 500,
      fetchLimits: { maxBytesPerPartition: 1_048_576, maxBytes: 10_485_760 },
      log,
    };
    const feed =
      client === "kafkajs"
        ? new KafkaFeed({ ...options, partitionsConsumedConcurrently: 1 })
        : new PlatformaticFeed({ ...options, brokers: BROKERS, clientId: "replayable-test" });
    let stopCalled = false;
    const assignedWhileStopping: number[] = [];
    const listener: FeedListener = {
      assigned: (generation) => {
        if (stopCalled) assignedWhileStopping.push(generation);
      },
      unassigned: () => undefined,
      fetched: () => undefined,
      crashed: (error) => {
        throw error;
      },
    };
    // Stopped by the test; this stops it when an assertion ends the test first (stop is idempotent).
    onTestFinished(() => feed.stop(() => Promise.resolve()));
    await feed.start(listener);
    await waitFor("the feed to join", () => (feed.isJoined ? true : undefined));

    // A member that joins and dies without LeaveGroup: the next rebalance waits for its session.
    const frozen = spawn(
      process.execPath,
      [FROZEN, client, BROKERS.join(","), groupId, topic, String(FROZEN_SESSION_MS)],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    onTestFinished(() => void frozen.kill("SIGKILL"));
    let out = "";
    frozen.stdout.on("data", (d: Buffer) => (out += d.toString()));
    await waitFor("the frozen member to join", () => (out.includes("joined") ? true : undefined));
    frozen.kill("SIGKILL");
    const rebalancing = () => lines.filter((l) => /group is rebalancing/i.test(l.msg)).length;
    const before = rebalancing();

    // A third member joins: the group rebalances, and the feed rejoins into a JoinGroup that waits.
    if (client === "kafkajs") {
      const third = testKafka().consumer({ groupId, sessionTimeout: 30_000 });
      onTestFinished(() => third.disconnect());
      await third.connect();
      await third.subscribe({ topics: [topic] });
      void third.run({ eachBatch: () => Promise.resolve() });
    } else {
      const { Consumer } = await import("@platformatic/kafka");
      const third = new Consumer({
        clientId: "third",
        bootstrapBrokers: BROKERS,
        groupId,
        sessionTimeout: 30_000,
        rebalanceTimeout: 60_000,
        heartbeatInterval: 1000,
        autocommit: false,
      });
      onTestFinished(() => third.close(true).catch(() => undefined));
      third.topics.trackAll(topic);
      third.on("error", () => undefined);
      void third.joinGroup({}).catch(() => undefined);
    }
    await waitFor(
      "the feed to see the rebalance",
      () => (rebalancing() > before ? true : undefined),
      30_000,
      50,
    );

    stopCalled = true;
    await feed.stop(() => Promise.resolve());
    const waits = lines.filter(
      (l) => l.level === 40 && l.msg.startsWith("graceful stop: still waiting for "),
    );
    expect(waits.length, JSON.stringify(lines.map((l) => l.msg))).toBeGreaterThan(0);
    expect(waits[0]!.step).toMatch(
      client === "kafkajs"
        ? /^KafkaJS's disconnect \(a JoinGroup under way/
        : /^LeaveGroup and the client's close/,
    );
    expect(assignedWhileStopping).toEqual([]);
  },
);
