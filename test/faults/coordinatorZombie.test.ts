/**
 * Issue 25, faults project: one member silent towards the group coordinator, but not towards
 * PostgreSQL nor the partition leaders: a zombie that can still write. Two `replayable run`
 * processes, A and B. The topic's leaders are moved off the coordinator broker, so that silencing
 * A's connections to the coordinator (its own only, new ones included: a rule of the coordinator's
 * fault proxy matches the local ports of A's process) cuts A's heartbeats and offset commits and
 * nothing else. The coordinator removes A after its session timeout and gives its partitions to B,
 * while A still holds fetched batches and applies them: its transactions are fenced by the
 * checkpoint row lock, and its offset commits must never move the group's offsets backwards.
 *
 * Checked against the model computed from the records produced: nothing lost, nothing applied
 * twice; the group's committed offsets, sampled all along, never go backwards and end at the high
 * watermark, before and after the path heals.
 *
 * After the path heals (A's old connections stay dead, new ones work), A rejoins within a bound:
 * KafkaJS closes a connection whose request timed out (patch 008, as Java's client does), so A's
 * next heartbeat goes over a new connection. Without the patch A's heartbeats, commits and
 * JoinGroup kept going to the dead connection, each failing after 30 s, until its consumer ran out
 * of retries and restarted (not rejoined 120 s after the heal in the one run measured).
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
  processLocalPorts,
  quietKafka,
  topicState,
  useBrokerProxies,
  waitForStableGroup,
  type ConnectionInfo,
} from "../helpers/faultCluster.js";
import { expectLedgerModel } from "../helpers/ledgerModel.js";
import { startCliInTest, type CliProcess } from "../helpers/process.js";
import { runArgs } from "../helpers/replay.js";
import { uniqueName, useStack, waitFor, waitForCaughtUp } from "../helpers/stack.js";

const stage = useBrokerProxies();
const stack = useStack();

const PARTITIONS = 4;
/** Records produced before the fault, during it, and after it heals. */
const BEFORE = 1000;
const DURING = 3000;
const AFTER = 500;
/** Session timeout of the members (ms): how long the coordinator waits for the zombie's heartbeats. */
const SESSION_TIMEOUT_MS = 10_000;
/** pg_sleep per statement on ledger.ledger_accounts while the fault lasts: the zombie's batches take a while. */
const PACE_MS = 20;
/**
 * How long A may take to rejoin after the heal: the request it has in flight on a dead connection
 * times out (KafkaJS's request timeout, 30 s), then its next heartbeat or join goes over a new
 * connection; the rest is KafkaJS's retry back-off and one rebalance.
 */
const REJOIN_BOUND_MS = 90_000;
/** How long B may take to own every partition and reach the log end while A is a zombie. */
const TAKEOVER_BOUND_MS = 120_000;

/** Committed offsets of the group, sampled until `stop()`; every backward step is kept. */
function sampleCommittedOffsets(group: string, topic: string) {
  const highest = new Map<number, bigint>();
  const backwards: string[] = [];
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        for (const c of await stack.admin.committedOffsets(group, [topic])) {
          if (BigInt(c.offset) < 0n) continue;
          const before = highest.get(c.partition);
          if (before !== undefined && BigInt(c.offset) < before)
            backwards.push(
              `partition ${c.partition}: ${before} -> ${c.offset} at ${new Date().toISOString()}`,
            );
          if (before === undefined || BigInt(c.offset) > before) highest.set(c.partition, BigInt(c.offset));
        }
        samples++;
      } catch {
        // The admin client retries on its own; a failed sample is only a gap in the history.
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  return {
    backwards,
    samples: () => samples,
    async stop() {
      running = false;
      await loop;
    },
  };
}

it("a member silent towards the group coordinator only (a zombie that can still write): its partitions go to the other member, the zombie's writes fenced, offsets never backwards, it rejoins after the heal, nothing lost or doubled", async () => {
  const topic = uniqueName("zombie");
  const group = uniqueName("g");
  await createReplicatedTopic(topic, PARTITIONS);
  // The leaders off the coordinator: A's silence towards it must cut only the group traffic.
  const coordinator = await groupCoordinator(group);
  const others = [1, 2, 3].filter((id) => id !== coordinator);
  for (const p of await topicState(topic))
    if (p.leader === coordinator) await moveLeader(topic, p.partition, others[p.partition % 2]!);
  expect((await topicState(topic)).filter((p) => p.leader === coordinator)).toEqual([]);

  const stream = generateLedgerStream({ count: BEFORE + DURING + AFTER, duplicateRate: 0, seed: 252 });
  await produceRecords(quietKafka(), topic, stream.records.slice(0, BEFORE));
  await stack.db.pool.query(
    `CREATE TABLE public.pace (ms int NOT NULL);
     INSERT INTO public.pace VALUES (0);
     CREATE FUNCTION public.pace() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep((SELECT ms FROM public.pace) / 1000.0); RETURN NULL; END $$;
     CREATE TRIGGER pace AFTER INSERT ON ledger.ledger_accounts FOR EACH STATEMENT EXECUTE FUNCTION public.pace()`,
  );

  const env = {
    KAFKA_BROKERS: stage.bootstrap,
    REPLAYABLE_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
    REPLAYABLE_HEARTBEAT_INTERVAL_MS: "1000",
    REPLAYABLE_LAG_REFRESH_MS: "1000",
    LOG_LEVEL: process.env.FAULTS_MEMBER_LOG_LEVEL ?? "info",
  };
  const a = startCliInTest(runArgs(stack.db.url, topic, group), env);
  const b = startCliInTest(runArgs(stack.db.url, topic, group), env);
  const members: CliProcess[] = [a, b];
  const logDir = process.env.FAULTS_MEMBER_LOG_DIR;
  if (logDir !== undefined)
    onTestFinished(() =>
      members.forEach((m, i) => writeFileSync(join(logDir, `coordinatorZombie-member-${i}.log`), m.stderr())),
    );
  const shares = await waitForStableGroup(stack.admin, group, topic, PARTITIONS, members);
  await waitForCaughtUp(stack.admin, group, topic, 120_000);
  const offsets = sampleCommittedOffsets(group, topic);
  onTestFinished(() => offsets.stop());

  // A's connections to the coordinator, open and new, go silent; B's pass.
  const pidA = a.child.pid!;
  const isA = (c: ConnectionInfo) => processLocalPorts(pidA).has(c.clientPort);
  const proxy = stage.brokerProxy(coordinator);
  proxy.setModeWhere(isA, "silent");
  // A connection of A's to the coordinator, open or the next one its heartbeat opens (between two
  // heartbeats A may hold none), silenced through the proxy: without it the test proves nothing.
  const silenced = await waitFor(
    "a silenced connection of A's to the coordinator",
    () => {
      const count = proxy.connections().filter(isA).length;
      return count > 0 ? count : undefined;
    },
    30_000,
  );
  const silencedAt = Date.now();
  await stack.db.pool.query(`UPDATE public.pace SET ms = ${PACE_MS}`);
  await produceRecords(quietKafka(), topic, stream.records.slice(BEFORE, BEFORE + DURING));

  // The coordinator removes A after its session timeout; B takes every partition and reaches the
  // log end while A, still silent towards the coordinator, may be applying the batches it holds.
  await waitFor(
    "the group to be Stable with B alone",
    async () => {
      const described = await stack.admin.describeGroup(group);
      return described.state === "Stable" && described.members.length === 1 ? true : undefined;
    },
    TAKEOVER_BOUND_MS,
  );
  // Still paced: B re-applies from the committed offsets (A's commits never arrived) while A may
  // still be applying what it holds; the checkpoint row lock serializes the two.
  await waitForCaughtUp(stack.admin, group, topic, TAKEOVER_BOUND_MS);
  const takenOverMs = Date.now() - silencedAt;
  await stack.db.pool.query("UPDATE public.pace SET ms = 0");

  // Heal as after a dropped flow: A's old connections to the coordinator stay dead, new ones work.
  proxy.silenceOpenConnections(isA);
  proxy.clearRules();
  const healedAt = Date.now();
  // A rejoins: its request in flight on a dead connection times out, KafkaJS closes that connection
  // (patch 008) and the next heartbeat, on a new connection, hears that A was removed.
  await waitFor(
    "A to rejoin the group after the heal",
    async () => {
      const described = await stack.admin.describeGroup(group);
      return described.state === "Stable" && described.members.length === 2 ? true : undefined;
    },
    REJOIN_BOUND_MS,
  );
  const rejoinedMs = Date.now() - healedAt;
  await produceRecords(quietKafka(), topic, stream.records.slice(BEFORE + DURING));
  await waitForCaughtUp(stack.admin, group, topic, 60_000);
  await offsets.stop();
  console.log(
    `${topic}: coordinator ${coordinator}; shares before ${JSON.stringify(shares)}; A (pid ${pidA}) silent towards it ` +
      `(${silenced} connections); B alone and caught up ${takenOverMs / 1000} s after the fault began; ` +
      `A rejoined ${rejoinedMs / 1000} s after the heal; ${offsets.samples()} samples of the committed offsets`,
  );

  for (const member of members) member.signal("SIGTERM");
  await Promise.all(members.map((m) => m.exited));
  expect(offsets.backwards, "committed offsets that moved backwards").toEqual([]);
  await expectLedgerModel(stack.db, stack.admin, topic, group, stream);
}, 510_000);
