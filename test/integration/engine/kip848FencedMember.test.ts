/**
 * Regression (issue 30, found by a break-it review): a KIP-848 member frozen past its session
 * timeout in a group whose other member is classic. The broker removed it and, with only classic
 * members left, turned the group back into a classic group; the member's heartbeats then got
 * GROUP_ID_NOT_FOUND, which it retried forever while fetching and applying the partitions the
 * other member owned (its offset commits refused), never joining again. It must take the error as
 * the end of its membership, give its partitions up and join again. Also from that review, the
 * membership's own edges: a stop while the join is answered, a failed metadata read of a new
 * assignment (fail points `group-heartbeat-answered`, `group-assignment-metadata`).
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { eventIdCount, ledgerChecksumOf } from "../../helpers/ledger.js";
import { startCli, type CliProcess } from "../../helpers/process.js";
import { runArgs } from "../../helpers/replay.js";
import {
  testKafka,
  testPlatformaticAdmin,
  uniqueName,
  useStack,
  waitFor,
  waitForCaughtUp,
} from "../../helpers/stack.js";

const stack = useStack();

/** A `replayable run` on @platformatic/kafka in a KIP-848 group with `failpoints`, killed when the test ends. */
function kip848Member(databaseUrl: string, topic: string, group: string, failpoints: string): CliProcess {
  const member = startCli(runArgs(databaseUrl, topic, group), {
    KAFKA_CLIENT: "platformatic",
    KAFKA_GROUP_PROTOCOL: "consumer",
    REPLAYABLE_FAILPOINTS: failpoints,
  });
  onTestFinished(async () => {
    member.kill();
    await member.exited;
  });
  return member;
}

describe("a KIP-848 member beside a classic one", () => {
  it("frozen past its session timeout, it joins again once it wakes (GROUP_ID_NOT_FOUND ends its membership); the ledger equals the model", async () => {
    const { admin, db } = stack;
    const topic = uniqueName("kip848-fenced");
    const group = uniqueName("g");
    await admin.createTopic(topic, 4);
    const stream = generateLedgerStream({ count: 900, duplicateRate: 0.05, seed: 83 });
    const parts = [stream.records.slice(0, 300), stream.records.slice(300, 600), stream.records.slice(600)];
    const members: CliProcess[] = [];
    onTestFinished(async () => {
      for (const m of members) {
        m.child.kill("SIGCONT");
        m.kill();
      }
      await Promise.all(members.map((m) => m.exited));
    });
    const platformatic = await testPlatformaticAdmin();
    onTestFinished(() => platformatic.close());
    const membersOfGroup = async () => (await platformatic.describeGroup(group)).members.length;

    // A: KafkaJS, classic protocol. B: @platformatic/kafka, KIP-848 (the broker's session timeout
    // for such members is 10 s on the local brokers).
    const a = startCli(runArgs(db.url, topic, group), { KAFKA_CLIENT: "kafkajs" });
    members.push(a);
    await produceRecords(testKafka(), topic, parts[0]!);
    await waitForCaughtUp(admin, group, topic);
    const b = startCli(runArgs(db.url, topic, group), {
      KAFKA_CLIENT: "platformatic",
      KAFKA_GROUP_PROTOCOL: "consumer",
    });
    members.push(b);
    await b.waitForStderr('"msg":"joined consumer group"');
    await waitFor("both members in the group", async () =>
      (await membersOfGroup()) === 2 ? true : undefined,
    );

    // B freezes past its session timeout: the broker removes it; A takes every partition.
    b.child.kill("SIGSTOP");
    await waitFor("B removed from the group", async () =>
      (await membersOfGroup()) === 1 ? true : undefined,
    );
    await produceRecords(testKafka(), topic, parts[1]!);
    await waitForCaughtUp(admin, group, topic);

    // B wakes: its next heartbeat tells it the membership is over; it joins again.
    b.child.kill("SIGCONT");
    await b.waitForStderr("fenced from the consumer group; joining again");
    await waitFor("both members in the group again", async () =>
      (await membersOfGroup()) === 2 ? true : undefined,
    );
    await produceRecords(testKafka(), topic, parts[2]!);
    await waitForCaughtUp(admin, group, topic);

    expect(await ledgerChecksumOf(db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(db.pool)).toBe(stream.events);
    for (const m of [a, b]) m.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    expect((await b.exited).code).toBe(0);
  });
});

describe("a classic member on @platformatic/kafka while the group switches to KIP-848", () => {
  it("keeps consuming its partitions once a KIP-848 member joins (its committed offsets read without a member id); the ledger equals the model", async () => {
    const { admin, db } = stack;
    const topic = uniqueName("kip848-switch");
    const group = uniqueName("g");
    await admin.createTopic(topic, 4);
    const stream = generateLedgerStream({ count: 600, duplicateRate: 0.05, seed: 84 });
    const members: CliProcess[] = [];
    onTestFinished(async () => {
      for (const m of members) m.kill();
      await Promise.all(members.map((m) => m.exited));
    });
    const platformatic = await testPlatformaticAdmin();
    onTestFinished(() => platformatic.close());

    const a = startCli(runArgs(db.url, topic, group), {
      KAFKA_CLIENT: "platformatic",
      KAFKA_GROUP_PROTOCOL: "classic",
    });
    members.push(a);
    await produceRecords(testKafka(), topic, stream.records.slice(0, 300));
    await waitForCaughtUp(admin, group, topic);
    const b = startCli(runArgs(db.url, topic, group), {
      KAFKA_CLIENT: "platformatic",
      KAFKA_GROUP_PROTOCOL: "consumer",
    });
    members.push(b);
    // The group becomes a consumer group holding A as a classic member: A joins again (a classic
    // rebalance) and gives partitions up, which B then gets.
    const gotPartitions = (m: CliProcess) =>
      m
        .stderr()
        .split("\n")
        .filter((l) => l.includes('"msg":"joined consumer group"') && /"assignment":\{"[^"]+":\[\d/.test(l));
    await waitFor("B to get partitions", () => (gotPartitions(b).length > 0 ? true : undefined));
    await waitFor("A to join again", () => (gotPartitions(a).length > 1 ? true : undefined));
    await produceRecords(testKafka(), topic, stream.records.slice(300));
    await waitForCaughtUp(admin, group, topic);

    expect(a.stderr()).not.toContain("reading the committed offsets failed");
    expect(await ledgerChecksumOf(db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(db.pool)).toBe(stream.events);
    for (const m of [a, b]) m.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    expect((await b.exited).code).toBe(0);
  });
  it("stopped while its first heartbeat is answered, it leaves the group: no member stays behind until the session timeout", async () => {
    // Regression (break-it review): the answer of the join heartbeat arrived after the stop began;
    // the member dropped it without taking its epoch, so leave() saw epoch 0 and sent no leave
    // heartbeat, and the broker kept the member for its session timeout: replay and rebuild were
    // refused, naming a member no process was running.
    const { admin, db } = stack;
    const topic = uniqueName("kip848-stop");
    const group = uniqueName("g");
    await admin.createTopic(topic, 2);
    const platformatic = await testPlatformaticAdmin();
    onTestFinished(() => platformatic.close());
    const member = kip848Member(db.url, topic, group, "group-heartbeat-answered=sleep:3000@1");
    await member.waitForStderr("failpoint group-heartbeat-answered: sleep");
    member.child.kill("SIGTERM");
    expect(await member.exited).toEqual({ code: 0, signal: null });
    // The broker's session timeout for KIP-848 members is 10 s here: a member left behind would
    // still be listed now.
    expect(await platformatic.describeGroup(group)).toMatchObject({ members: [] });
  });

  it("a failed metadata read of a new assignment is retried: the member takes the assignment and consumes", async () => {
    // Regression (break-it review): the assignment was marked as taken before the metadata that
    // names its topics was read; when that read failed, the retried heartbeat's answer (the same
    // assignment) looked old, and the member never consumed the partitions the broker gave it.
    const { admin, db } = stack;
    const topic = uniqueName("kip848-metadata");
    const group = uniqueName("g");
    await admin.createTopic(topic, 2);
    const stream = generateLedgerStream({ count: 200, duplicateRate: 0.05, seed: 87 });
    await produceRecords(testKafka(), topic, stream.records);
    const member = kip848Member(db.url, topic, group, "group-assignment-metadata=throw@1");
    await member.waitForStderr("consumer group heartbeat failed; retrying");
    await waitForCaughtUp(admin, group, topic, 60_000);
    expect(await ledgerChecksumOf(db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(db.pool)).toBe(stream.events);
  });
});
