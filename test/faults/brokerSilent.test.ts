/**
 * Issue 25, faults project: one broker silent towards the members, but not towards the rest of the
 * cluster, while its leaders move. The broker keeps replicating through its INTERNAL listener, so
 * it stays in every ISR and keeps leading until the test moves its leaders away; only the members'
 * connections to it (through its fault proxy) carry nothing, new ones included. Records are
 * produced meanwhile (directly), and the leaders of the partitions it led move to the other brokers.
 *
 * The member (one `replayable run` process, default Kafka settings) must consume every partition
 * from the new leaders while the broker is still silent: a member that waited forever on the silent
 * connection would never catch up. After the broker's proxy passes again the group must reach the
 * log end within a bound, and the ledger must equal the model computed from the records produced.
 *
 * One member, so that the silent broker's partitions are all in one fetch of the same member, and
 * they move to two different brokers: @platformatic/kafka retried such a fetch (after its request
 * timed out) on the silent broker, as the partitions no longer had one leader, for its three
 * retries of 30 s each (its patch 002, patches/README.md). With two members that happened only when
 * one member held two of them, which made the test fail now and then.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../src/kafka/producer.js";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import {
  createReplicatedTopic,
  groupCoordinator,
  moveLeader,
  partitionsByLeader,
  quietKafka,
  topicState,
  useBrokerProxies,
  waitForStableGroup,
} from "../helpers/faultCluster.js";
import { expectLedgerModel } from "../helpers/ledgerModel.js";
import { explainedByMembers, startCliInTest, type CliProcess } from "../helpers/process.js";
import { runArgs } from "../helpers/replay.js";
import { uniqueName, useStack, waitForCaughtUp } from "../helpers/stack.js";

const stage = useBrokerProxies();
const stack = useStack();

const PARTITIONS = 6;
/** Records produced before the fault, during it, and after it heals. */
const BEFORE = 2000;
const DURING = 2000;
const AFTER = 500;
/**
 * How long the member may take to consume from the new leaders while the old one stays silent.
 * The fetch in flight on the silent connection ends at the request timeout (30 s); the member then
 * learns the new leaders from a metadata request. @platformatic/kafka asks a broker whose request
 * timed out last (its patch 001), so it fetches from the new leaders at once (27 s after they moved
 * here); the same fetch retried on the silent broker (without its patch 002) took 3 request
 * timeouts more. KafkaJS asked a random broker for metadata and for the group coordinator, the
 * silent one too, each time for a request timeout (85 s after the leaders moved here, twice); its
 * patch 013 asks a broker whose request has waited a third of its timeout, or timed out, last.
 */
const SILENT_BOUND_MS = 75_000;
/** How long the group may take to reach the log end once the broker's proxy passes again. */
const HEALED_BOUND_MS = 60_000;

it(
  "one broker silent towards the members while its leaders move: every partition consumed from the new leaders, caught up within the bound after it heals, the ledger equals the model",
  { timeout: 420_000 },
  async () => {
    const topic = uniqueName("broker-silent");
    const group = uniqueName("g");
    await createReplicatedTopic(topic, PARTITIONS);
    const stream = generateLedgerStream({ count: BEFORE + DURING + AFTER, duplicateRate: 0, seed: 251 });
    await produceRecords(quietKafka(), topic, stream.records.slice(0, BEFORE));

    const members: CliProcess[] = [];
    for (let i = 0; i < 1; i++)
      members.push(
        startCliInTest(runArgs(stack.db.url, topic, group), {
          KAFKA_BROKERS: stage.bootstrap,
          REPLAYABLE_LAG_REFRESH_MS: "1000",
          LOG_LEVEL: process.env.FAULTS_MEMBER_LOG_LEVEL ?? "info",
        }),
      );
    const logDir = process.env.FAULTS_MEMBER_LOG_DIR;
    if (logDir !== undefined)
      onTestFinished(() =>
        members.forEach((m, i) => writeFileSync(join(logDir, `brokerSilent-member-${i}.log`), m.stderr())),
      );
    // The member in the group, fetching every partition, and caught up.
    const shares = await waitForStableGroup(stack.admin, group, topic, PARTITIONS, members);
    await waitForCaughtUp(stack.admin, group, topic, 120_000);
    console.log(`${new Date().toISOString()} caught up before the fault; shares ${JSON.stringify(shares)}`);

    // The victim: a broker that leads partitions of the topic and is not the group coordinator (a
    // silent coordinator is test/faults/coordinatorZombie.test.ts).
    const coordinator = await groupCoordinator(group);
    const byLeader = await partitionsByLeader(topic);
    const [victim, led] = [...byLeader]
      .filter(([id]) => id !== coordinator)
      .sort((a, b) => b[1].length - a[1].length)[0]!;
    // At least two, so that they move to two brokers (round robin below).
    expect(led.length).toBeGreaterThanOrEqual(2);

    console.log(
      `${new Date().toISOString()} silencing ${victim} (leads ${led.join(",")}, coordinator ${coordinator})`,
    );
    const silencedAt = Date.now();
    stage.brokerProxy(victim).setMode("silent");
    await produceRecords(quietKafka(), topic, stream.records.slice(BEFORE, BEFORE + DURING));
    // Each of its partitions to another in-sync replica (round robin over the two others); the
    // victim stays a follower, in the ISR, as its INTERNAL listener still replicates.
    const others = [1, 2, 3].filter((id) => id !== victim);
    for (const [i, partition] of led.entries()) await moveLeader(topic, partition, others[i % 2]!);
    const state = await topicState(topic);
    expect(state.filter((p) => p.leader === victim)).toEqual([]);
    expect(state.every((p) => p.isr.includes(victim))).toBe(true);
    const movedAt = Date.now();
    console.log(`${new Date().toISOString()} leaders moved`);

    // Still silent: the members must get off the silent connection by themselves.
    await explainedByMembers(members, waitForCaughtUp(stack.admin, group, topic, SILENT_BOUND_MS));
    const caughtUpSilentMs = Date.now() - movedAt;
    expect(stage.brokerProxy(victim).mode).toBe("silent");

    // The network heals as after a dropped NAT flow: the members' old connections to the broker
    // never carry anything again, new ones work.
    stage.brokerProxy(victim).silenceOpenConnections();
    stage.brokerProxy(victim).restore();
    const healedAt = Date.now();
    await produceRecords(quietKafka(), topic, stream.records.slice(BEFORE + DURING));
    await explainedByMembers(members, waitForCaughtUp(stack.admin, group, topic, HEALED_BOUND_MS));
    const caughtUpHealedMs = Date.now() - healedAt;
    console.log(
      `${topic}: broker ${victim} (leading ${led.join(",")}; coordinator ${coordinator}) silent for ${
        (healedAt - silencedAt) / 1000
      } s; caught up ${caughtUpSilentMs / 1000} s after its leaders moved, ${caughtUpHealedMs / 1000} s after it healed`,
    );

    // A graceful stop may wait for a request on the dead connection (KafkaJS's request timeout, as
    // long as the shutdown timeout): the members must exit, not necessarily with 0.
    for (const member of members) member.signal("SIGTERM");
    await Promise.all(members.map((m) => m.exited));
    await expectLedgerModel(stack.db, stack.admin, topic, group, stream);
  },
);
