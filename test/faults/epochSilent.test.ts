/**
 * Issue 25, item 1 ("Loss: the rebuild epoch can be read late") under network faults: a member's
 * PostgreSQL connections go silent (half-open: open, nothing delivered, no close seen) around a
 * `rebuild`. A generation's rebuild epoch must be the one in force when its fetch positions were
 * read: a late read returning the rebuild's new epoch would let batches fetched before the rebuild
 * move the checkpoint past the records the rebuild reset, which would then count as duplicates.
 * The member reads the epoch on its advisory-lock session and trusts it only when that session was
 * held from the join through the read (docs/design.md "The rebuild epoch"); a silent session is
 * found out by the client-side query timeout (REPLAYABLE_DB_QUERY_TIMEOUT_MS), taken again, and the
 * member rejoins the group.
 *
 * The member is frozen (SIGSTOP) past its session timeout so that the group empties and the rebuild
 * can run; its lock session is ended on the server (a failover, `idle_session_timeout`), which the
 * member cannot see through the silent proxy. Both cases check against the model: the ledger equals
 * the one computed from every record produced, and every event id is recorded once. They need no
 * broker fault: the member talks to the brokers directly (KAFKA_BROKERS of the project).
 */
import { expect, it } from "vitest";
import { postgresProxy } from "../helpers/faultCluster.js";
import { eventIdCount, ledgerChecksumOf } from "../helpers/ledger.js";
import { runCli, startCliInTest } from "../helpers/process.js";
import { runArgs } from "../helpers/replay.js";
import { BROKERS, testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../helpers/stack.js";
import { produceRecords } from "../../src/kafka/producer.js";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";

const stack = useStack();

/** Small deadlines so that each case runs in about a minute (the defaults are in README). */
const QUERY_TIMEOUT_MS = 3000;
const SESSION_TIMEOUT_MS = 6000;
const RETRY_MAX_MS = 2000;
/** Recovery after the member wakes: the query timeout, the lock taken again, a rejoin, the replay. */
const RECOVERY_BOUND_MS = 60_000;

function memberEnv(): Record<string, string> {
  return {
    KAFKA_BROKERS: BROKERS.join(","),
    REPLAYABLE_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
    REPLAYABLE_HEARTBEAT_INTERVAL_MS: "500",
    REPLAYABLE_RETRY_INITIAL_MS: "100",
    REPLAYABLE_RETRY_MAX_MS: String(RETRY_MAX_MS),
    REPLAYABLE_DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    REPLAYABLE_LOCK_TIMEOUT_MS: "1000",
    REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS: "1000",
    REPLAYABLE_MAX_BATCH_RECORDS: "25",
  };
}

async function waitForEmptyGroup(group: string): Promise<void> {
  await waitFor(`group ${group} to have no members`, async () =>
    (await stack.admin.describeGroup(group)).members.length === 0 ? true : undefined,
  );
}

/**
 * Ends the member's PostgreSQL sessions on the server (a failover, a timeout on the server side):
 * through a silent proxy the member does not see it. Returns how many were ended.
 */
async function endMemberSessions(): Promise<number> {
  const r = await stack.db.pool.query<{ ended: boolean }>(
    `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
     WHERE datname = current_database() AND application_name LIKE 'replayable:ledger%'`,
  );
  return r.rows.filter((row) => row.ended).length;
}

/** How many times {@link rebuildWhenFree} was refused so far. */
interface Refusals {
  count: number;
}

/**
 * `rebuild --execute`, run again while it is refused (the member still in the group, or its lock
 * still held), as an operator waiting for the projection to be free would.
 */
async function rebuildWhenFree(
  group: string,
  topic: string,
  refusals: Refusals = { count: 0 },
): Promise<void> {
  await waitFor(
    "the rebuild to run",
    async () => {
      const result = await runCli([
        "rebuild",
        "--projection",
        "ledger",
        "--group",
        group,
        "--topic",
        topic,
        "--database-url",
        stack.db.url,
        "--execute",
      ]);
      if (result.code === 0) return true;
      refusals.count += 1;
      return undefined;
    },
    90_000,
    500,
  );
}

/** A seeded ledger stream in two parts, produced to a one-partition topic. */
async function ledgerTopic(seed: number) {
  const topic = uniqueName("epoch-silent");
  await stack.admin.createTopic(topic, 1);
  const stream = generateLedgerStream({ count: 300, duplicateRate: 0.05, seed });
  return { topic, stream, first: stream.records.slice(0, 150), second: stream.records.slice(150) };
}

it("PostgreSQL silent across a rebalance (the epoch read) while a rebuild runs: nothing lost or applied twice, and the member recovers once PostgreSQL answers", async () => {
  const { topic, stream, first, second } = await ledgerTopic(251);
  const group = uniqueName("g");
  const pg = await postgresProxy(stack.db.url);
  const member = startCliInTest(runArgs(pg.url, topic, group), memberEnv());
  try {
    await produceRecords(testKafka(), topic, first);
    await waitForCaughtUp(stack.admin, group, topic);

    // Frozen past its session timeout: the group empties. Meanwhile PostgreSQL goes silent for the
    // member (its open connections for good, new ones until restored), the server ends its sessions
    // (the shared lock with them), more records arrive, and the projection is rebuilt.
    member.signal("SIGSTOP");
    await waitForEmptyGroup(group);
    pg.proxy.setMode("silent");
    pg.proxy.silenceOpenConnections();
    expect(await endMemberSessions()).toBeGreaterThan(0);
    await produceRecords(testKafka(), topic, second);
    await rebuildWhenFree(group, topic);

    // Woken, the member rejoins the group (a rebalance) and reads its new generation's epoch on a
    // silent session: it must not trust any epoch it cannot prove.
    member.signal("SIGCONT");
    await member.waitForStderr("Query read timeout", QUERY_TIMEOUT_MS + 30_000);
    const restoredAt = Date.now();
    pg.proxy.restore();

    await waitForCaughtUp(stack.admin, group, topic, RECOVERY_BOUND_MS);
    expect(Date.now() - restoredAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
    expect(member.child.exitCode).toBeNull();
    expect(member.stderr()).toContain("projection's shared advisory lock taken again");
    // The way out: the generation joined on the silent lock session was given up, and rejoined.
    expect(member.stderr()).toContain("rejoining the consumer group: this generation's batches were dropped");
  } finally {
    // A failed test must not leave the member stopped: its SIGTERM would wait for ever.
    member.signal("SIGCONT");
  }
});

it("the lock session silent while a rebuild waits for it: nothing lost or applied twice, and the member recovers", async () => {
  const { topic, stream, first, second } = await ledgerTopic(252);
  const group = uniqueName("g");
  const pg = await postgresProxy(stack.db.url);
  const member = startCliInTest(runArgs(pg.url, topic, group), memberEnv());
  try {
    await produceRecords(testKafka(), topic, first);
    await waitForCaughtUp(stack.admin, group, topic);

    // Frozen past its session timeout, the member leaves the group but still holds the lock: the
    // operator's rebuild is refused (PROJECTION_LOCKED) and run again until the lock is free.
    member.signal("SIGSTOP");
    await waitForEmptyGroup(group);
    const refusals: Refusals = { count: 0 };
    const rebuilt = rebuildWhenFree(group, topic, refusals);
    await waitFor("the rebuild to be refused", () => (refusals.count > 0 ? true : undefined), 60_000, 100);
    // The member's open connections (its lock session's among them) go silent for good; new ones
    // work. The server ends the lock session (a failover, idle_session_timeout): the member, frozen
    // behind the silent connection, cannot see it, and its client still believes it holds the lock.
    pg.proxy.silenceOpenConnections();
    expect(await endMemberSessions()).toBeGreaterThan(0);
    await rebuilt;
    await produceRecords(testKafka(), topic, second);

    const wokenAt = Date.now();
    member.signal("SIGCONT");
    await waitForCaughtUp(stack.admin, group, topic, RECOVERY_BOUND_MS);
    expect(Date.now() - wokenAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
    expect(member.child.exitCode).toBeNull();
    expect(member.stderr()).toContain("projection's shared advisory lock taken again");
    // The way out: the generation joined on the silent lock session was given up, and rejoined.
    expect(member.stderr()).toContain("rejoining the consumer group: this generation's batches were dropped");
  } finally {
    member.signal("SIGCONT");
  }
});
