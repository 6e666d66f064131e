/**
 * Outages against servers of the test's own (never the shared ones): PostgreSQL restarted and the
 * Kafka broker restarted while records arrive. The consumer must recover by itself, in one process,
 * with every record applied once and nothing dead-lettered.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFailed, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { createKafka } from "../../../src/kafka/client.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { combinedChecksum } from "../../helpers/expectedLedger.js";
import { ledgerChecksumOf } from "../../helpers/ledger.js";
import { startPrivateKafka } from "../../helpers/privateKafka.js";
import { startPrivatePostgres } from "../../helpers/privatePostgres.js";
import { scrapeMetric, startCli, type CliProcess } from "../../helpers/process.js";
import {
  BROKERS,
  createTestDatabase,
  testAdmin,
  uniqueName,
  waitFor,
  waitForCaughtUp,
} from "../../helpers/stack.js";

const FAST = {
  REPLAYABLE_SESSION_TIMEOUT_MS: "6000",
  REPLAYABLE_HEARTBEAT_INTERVAL_MS: "1000",
  REPLAYABLE_MAX_BATCH_RECORDS: "20",
  REPLAYABLE_RETRY_INITIAL_MS: "100",
  REPLAYABLE_RETRY_MAX_MS: "2000",
};

let sharedAdmin: ClusterAdmin;

beforeAll(async () => {
  sharedAdmin = await testAdmin();
});

afterAll(async () => {
  await sharedAdmin?.close();
});

function run(args: { topic: string; group: string; databaseUrl: string; brokers?: string }): CliProcess {
  const cli = startCli(
    [
      "run",
      "--projection",
      "ledger",
      "--topic",
      args.topic,
      "--group",
      args.group,
      "--database-url",
      args.databaseUrl,
      ...(args.brokers === undefined ? [] : ["--brokers", args.brokers]),
    ],
    FAST,
  );
  onTestFailed(() => {
    process.stderr.write(
      `--- consumer stderr (last lines) ---\n${cli.stderr().split("\n").slice(-40).join("\n")}\n`,
    );
  });
  onTestFinished(async () => {
    if (cli.child.exitCode === null && cli.child.signalCode === null) {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  });
  return cli;
}

/** The process is still the one we started: running, started once, never crashed. */
function expectNoCrashLoop(cli: CliProcess): void {
  expect(cli.child.exitCode).toBeNull();
  expect(cli.child.signalCode).toBeNull();
  expect(cli.stderr().match(/"msg":"starting"/g)?.length).toBe(1);
  expect(cli.stderr()).not.toContain('"msg":"consumer stopping on a fatal error"');
}

async function count(url: string, sql: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ n: string }>(sql);
    return Number(r.rows[0]!.n);
  } finally {
    await client.end();
  }
}

describe("outages", () => {
  it("PostgreSQL restarted mid-stream: no loss, no double apply, the consumer recovers by itself", async () => {
    const server = await startPrivatePostgres();
    onTestFinished(() => server.destroy());
    const topic = uniqueName("pg-outage");
    const group = uniqueName("g");
    await sharedAdmin.createTopic(topic, 3);
    const kafka = createKafka({ brokers: BROKERS, clientId: "test", log: createLogger("error") });
    const first = generateLedgerStream({ count: 300, duplicateRate: 0.1, seed: 21, idPrefix: "a-" });
    const second = generateLedgerStream({ count: 300, duplicateRate: 0.1, seed: 22, idPrefix: "b-" });

    await produceRecords(kafka, topic, first.records);
    const cli = run({ topic, group, databaseUrl: server.url });
    const port = await cli.metricsPort();
    await waitForCaughtUp(sharedAdmin, group, topic);

    server.stop();
    await produceRecords(kafka, topic, second.records);
    // Transactions fail while the server is down; the partitions are paused, not dead-lettered.
    await cli.waitForStderr("partition paused", 90_000);
    server.start();
    await waitForCaughtUp(sharedAdmin, group, topic, 180_000);

    expectNoCrashLoop(cli);
    const pool = new pg.Pool({ connectionString: server.url, max: 1 });
    onTestFinished(() => pool.end());
    expect(await ledgerChecksumOf(pool)).toBe(combinedChecksum([first.expected, second.expected]));
    expect(await count(server.url, "SELECT count(*) AS n FROM replayable.processed_events")).toBe(
      first.events + second.events,
    );
    expect(await count(server.url, "SELECT count(*) AS n FROM replayable.dead_letters")).toBe(0);
    expect(
      await scrapeMetric(port, "replayable_transaction_retries_total", { reason: "connection" }),
    ).toBeGreaterThan(0);
    expect(await scrapeMetric(port, "replayable_records_dead_lettered_total")).toBe(0);
    // The session-level projection lock died with its connection and was taken again (its own
    // back-off can end after the transactions caught up: wait for it with a deadline).
    await cli.waitForStderr('"msg":"projection\'s shared advisory lock taken again"', 60_000);
    expect(cli.stderr()).toContain('"msg":"partition resumed"');
    await waitFor("/readyz to answer 200 again", async () =>
      (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined,
    );
  });

  it("the Kafka broker restarted mid-stream: no loss, no double apply, the consumer recovers by itself", async () => {
    const broker = await startPrivateKafka();
    onTestFinished(() => broker.destroy());
    const db = await createTestDatabase();
    onTestFinished(() => db.drop());
    const kafka = createKafka({ brokers: [broker.brokers], clientId: "test", log: createLogger("error") });
    const admin = await testAdmin([broker.brokers]);
    onTestFinished(() => admin.close().catch(() => undefined));
    const topic = uniqueName("kafka-outage");
    const group = uniqueName("g");
    await admin.createTopic(topic, 3);
    const first = generateLedgerStream({ count: 300, duplicateRate: 0.1, seed: 31, idPrefix: "a-" });
    const second = generateLedgerStream({ count: 300, duplicateRate: 0.1, seed: 32, idPrefix: "b-" });

    await produceRecords(kafka, topic, first.records);
    const cli = run({ topic, group, databaseUrl: db.url, brokers: broker.brokers });
    const port = await cli.metricsPort();
    await waitForCaughtUp(admin, group, topic);

    broker.stop();
    await cli.waitForStderr(/ECONNREFUSED|Connection error|Connection timeout|crashed/, 60_000);
    broker.start();
    await produceRecords(kafka, topic, second.records);
    await waitForCaughtUp(admin, group, topic, 240_000);

    expectNoCrashLoop(cli);
    expect(await ledgerChecksumOf(db.pool)).toBe(combinedChecksum([first.expected, second.expected]));
    const events = await db.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM replayable.processed_events",
    );
    expect(Number(events.rows[0]!.n)).toBe(first.events + second.events);
    const letters = await db.pool.query<{ n: string }>("SELECT count(*) AS n FROM replayable.dead_letters");
    expect(Number(letters.rows[0]!.n)).toBe(0);
    expect(await scrapeMetric(port, "replayable_records_dead_lettered_total")).toBe(0);
  });
});
