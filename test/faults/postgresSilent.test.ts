/**
 * Issue 25, case 3 ("Stuck: a silently dead PostgreSQL connection"): every connection the member
 * has open to PostgreSQL goes silent mid-transaction, for good (half-open: nothing delivered, no
 * close seen by either end), while new connections work. Without deadlines the member waited
 * forever on the silent transactions, kept heartbeating Kafka and so kept its partitions, and the
 * dead backends kept the checkpoint rows locked.
 *
 * The member must notice within the documented bound (the client-side query timeout, then the
 * back-off), the server must end the dead transactions (idle_in_transaction_session_timeout), and
 * the ledger must equal the model computed from the records produced: nothing lost or doubled.
 */
import { expect, it } from "vitest";
import { combinedChecksum } from "../helpers/expectedLedger.js";
import { postgresProxy, useBrokerProxies } from "../helpers/faultCluster.js";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../helpers/ledger.js";
import { startCliInTest } from "../helpers/process.js";
import { runArgs } from "../helpers/replay.js";
import { uniqueName, useStack, waitFor, waitForCaughtUp } from "../helpers/stack.js";

const stage = useBrokerProxies();
const stack = useStack();

const RECORDS = 3000;
/** Small deadlines so that the test runs in well under 2 minutes (the defaults are in README). */
const QUERY_TIMEOUT_MS = 3000;
const IDLE_IN_TRANSACTION_MS = 3000;
const RETRY_MAX_MS = 2000;
/** pg_sleep per applying statement: the transactions are in flight when the connections go silent. */
const PACE_MS = 150;

/** Backends of the member (application_name replayable:ledger...) in this test's database. */
async function memberBackends(): Promise<{ pid: number; inTransaction: boolean; state: string }[]> {
  const r = await stack.db.pool.query<{ pid: number; in_transaction: boolean; state: string | null }>(
    `SELECT pid, xact_start IS NOT NULL AS in_transaction, state FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE 'replayable:%'`,
  );
  return r.rows.map((row) => ({ pid: row.pid, inTransaction: row.in_transaction, state: row.state ?? "" }));
}

/** Sum of the checkpoints (records applied, offsets from 0 without gaps) of `topic`. */
async function applied(topic: string): Promise<number> {
  const r = await stack.db.pool.query<{ n: string | null }>(
    "SELECT sum(next_offset) AS n FROM replayable.checkpoints WHERE topic = $1",
    [topic],
  );
  return Number(r.rows[0]?.n ?? 0);
}

it("recovers from every PostgreSQL connection going silent mid-transaction for good, within the bound, nothing lost or doubled", async () => {
  const topic = uniqueName("pg-silent");
  const group = uniqueName("g");
  const stream = await produceLedger(stack.admin, topic, { count: RECORDS, partitions: 3, seed: 25 });
  await stack.db.pool.query(
    `CREATE FUNCTION public.pace() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(${PACE_MS} / 1000.0); RETURN NULL; END $$;
     CREATE TRIGGER pace AFTER INSERT ON ledger.ledger_accounts FOR EACH STATEMENT EXECUTE FUNCTION public.pace()`,
  );
  const pg = await postgresProxy(stack.db.url);
  const cli = startCliInTest(runArgs(pg.url, topic, group), {
    KAFKA_BROKERS: stage.bootstrap,
    REPLAYABLE_MAX_BATCH_RECORDS: "25",
    REPLAYABLE_PARTITIONS_CONCURRENTLY: "3",
    REPLAYABLE_RETRY_INITIAL_MS: "100",
    REPLAYABLE_RETRY_MAX_MS: String(RETRY_MAX_MS),
    REPLAYABLE_LOCK_TIMEOUT_MS: "1000",
    REPLAYABLE_DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    REPLAYABLE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_IN_TRANSACTION_MS),
    REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS: "1000",
  });
  await waitFor("the member to apply a tenth of the records", async () =>
    (await applied(topic)) >= RECORDS / 10 ? true : undefined,
  );
  // Mid-stream, with transactions in flight: every open connection goes silent for good.
  const before = await memberBackends();
  const silencedAt = Date.now();
  const appliedAtSilence = await applied(topic);
  pg.proxy.silenceOpenConnections();
  expect(appliedAtSilence).toBeLessThan(RECORDS);
  expect(before.some((b) => b.inTransaction)).toBe(true);

  // The bound at these settings: the query timeout, then a retry after at most RETRY_MAX_MS, plus
  // the time to apply the rest (about 100 transactions of 25 records, 3 at once, PACE_MS each).
  const boundMs = QUERY_TIMEOUT_MS + RETRY_MAX_MS + 45_000;
  await waitForCaughtUp(stack.admin, group, topic, boundMs);
  const recoveredMs = Date.now() - silencedAt;

  // The dead transactions' backends were ended by the server (idle_in_transaction_session_timeout):
  // none of the backends in a transaction at the silence is left in one.
  const silencedInTransaction = new Set(before.filter((b) => b.inTransaction).map((b) => b.pid));
  await waitFor(
    "the server to end the silent transactions",
    async () =>
      (await memberBackends()).some((b) => silencedInTransaction.has(b.pid) && b.inTransaction)
        ? undefined
        : true,
    IDLE_IN_TRANSACTION_MS + 10_000,
  );

  // Nothing lost, nothing applied twice: the ledger equals the model of the records produced.
  expect(await ledgerChecksumOf(stack.db.pool)).toBe(combinedChecksum([stream.expected]));
  expect(await eventIdCount(stack.db.pool)).toBe(RECORDS);
  expect(await applied(topic)).toBe(RECORDS);
  expect(cli.child.exitCode).toBeNull();
  expect(recoveredMs).toBeLessThan(boundMs);
  // The way out was the deadlines: the client-side query timeout ended the silent transactions
  // (retried as a connection failure) and the lock session's health check found it silent.
  const lines = cli.stderr().split("\n");
  expect(lines.some((l) => l.includes("Query read timeout") && l.includes('"reason":"connection"'))).toBe(
    true,
  );
  expect(lines.some((l) => l.includes("advisory lock taken again"))).toBe(true);
});
