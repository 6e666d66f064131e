/**
 * The group coordinator moves (the leader of the group's partition of `__consumer_offsets` moves to
 * another broker, as Kafka's automatic preferred leader election does every 5 minutes when leaders
 * are unbalanced): the old coordinator answers the members' group requests (heartbeats, offset
 * commits) with NOT_COORDINATOR, and they must find the new one. A member that kept sending them to
 * the broker it found first never commits again (on @platformatic/kafka under KIP-848, replayable
 * sends the heartbeats and the commits itself and kept asking the library's cached coordinator).
 *
 * Records produced after the move must be applied and their offsets committed within a bound, and
 * the ledger must equal the model computed from the records produced.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../src/kafka/producer.js";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import {
  createReplicatedTopic,
  ensureAllBrokersUp,
  groupCoordinator,
  moveLeader,
  offsetsPartitionOf,
  quietKafka,
  topicState,
} from "../helpers/cluster.js";
import { expectLedgerModel } from "../helpers/ledgerModel.js";
import { startCliInTest, type CliProcess } from "../helpers/process.js";
import { runArgs } from "../helpers/replay.js";
import { uniqueName, useStack, waitForCaughtUp } from "../helpers/stack.js";

const stack = useStack();
afterEach(ensureAllBrokersUp);

const PARTITIONS = 4;
const BEFORE = 1000;
const AFTER = 1000;
/**
 * How long the group may take to commit the records produced after the move: a member learns of
 * the move from its next heartbeat or commit (heartbeats every 3 s classic, 5 s under KIP-848), and
 * a classic group rebalances once the old coordinator's members are gone.
 */
const MOVED_BOUND_MS = 60_000;

it(
  "the group coordinator moves to another broker: the records produced afterwards are committed within the bound, the ledger equals the model",
  { timeout: 300_000 },
  async () => {
    const topic = uniqueName("coordinator-move");
    const group = uniqueName("g");
    await createReplicatedTopic(topic, PARTITIONS, { replicationFactor: 3, minInsync: 2 });
    const stream = generateLedgerStream({ count: BEFORE + AFTER, duplicateRate: 0, seed: 307 });
    await produceRecords(quietKafka(), topic, stream.records.slice(0, BEFORE));

    const members: CliProcess[] = [];
    for (let i = 0; i < 2; i++)
      members.push(
        startCliInTest(runArgs(stack.db.url, topic, group), {
          REPLAYABLE_LAG_REFRESH_MS: "1000",
          LOG_LEVEL: process.env.CLUSTER_MEMBER_LOG_LEVEL ?? "info",
        }),
      );
    const logDir = process.env.CLUSTER_MEMBER_LOG_DIR;
    if (logDir !== undefined)
      onTestFinished(() =>
        members.forEach((m, i) => writeFileSync(join(logDir, `coordinatorMove-member-${i}.log`), m.stderr())),
      );
    await waitForCaughtUp(stack.admin, group, topic, 120_000);

    const from = await groupCoordinator(group);
    const offsets = await topicState("__consumer_offsets");
    const state = offsets.find((p) => p.partition === offsetsPartitionOf(group, offsets.length))!;
    const to = state.isr.find((id) => id !== from);
    expect(to).toBeDefined();
    await moveLeader("__consumer_offsets", state.partition, to!);
    expect(await groupCoordinator(group)).toBe(to);
    const movedAt = Date.now();

    await produceRecords(quietKafka(), topic, stream.records.slice(BEFORE));
    await waitForCaughtUp(stack.admin, group, topic, MOVED_BOUND_MS);
    console.log(
      `${topic}: coordinator moved from broker ${from} to ${to}; caught up ${(Date.now() - movedAt) / 1000} s later`,
    );

    for (const member of members) member.signal("SIGTERM");
    expect((await Promise.all(members.map((m) => m.exited))).map((e) => e.code)).toEqual([0, 0]);
    await expectLedgerModel(stack.db, stack.admin, topic, group, stream);
  },
);
