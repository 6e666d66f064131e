/**
 * The bad-input corpus (test/fixtures/bad-input) produced among good ledger records across three
 * partitions, to a consumer running as a user runs it, with a DLQ topic: every bad record ends in
 * replayable.dead_letters with its exact bytes (and on the DLQ topic), every good record is applied
 * once, every partition's committed offset reaches its end, and the process never restarts.
 */
import { expect, it, onTestFailed, onTestFinished } from "vitest";
import { DLQ_HEADERS } from "../../../src/kafka/deadLetterPublisher.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { readTopic } from "../../../src/kafka/readTopic.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import {
  FIXTURE_HEADER,
  loadBadInput,
  toProducerRecord,
  type FixtureRecord,
} from "../../helpers/badInput.js";
import { combinedChecksum } from "../../helpers/expectedLedger.js";
import { ledgerChecksumOf } from "../../helpers/ledger.js";
import { scrapeMetric, startCli } from "../../helpers/process.js";
import { testKafka, uniqueName, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const stack = useStack();

/** Room for the 2 MiB record on the broker (default max.message.bytes is about 1 MB). */
const LARGE = { "max.message.bytes": "4194304" };

interface DeadLetterRow {
  id: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string[]>;
  error_code: string;
  error_message: string;
  attempts: number;
  record_timestamp: Date | null;
  published_at: Date | null;
}

function decodeHeaders(headers: Record<string, string[]>): Record<string, Buffer[]> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, values]) => [name, values.map((v) => Buffer.from(v, "base64"))]),
  );
}

function sameBytes(actual: Buffer | null, expected: Buffer | null): boolean {
  return actual === null || expected === null ? actual === expected : actual.equals(expected);
}

it("every bad record is dead-lettered with its exact bytes, every good one applied once, offsets at the end, one process", async () => {
  const topic = uniqueName("bad-input");
  const dlqTopic = `${topic}.dlq`;
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 3, LARGE);
  await stack.admin.createTopic(dlqTopic, 1, LARGE);

  const kinds = loadBadInput();
  expect(kinds.size).toBeGreaterThanOrEqual(20);
  const good = generateLedgerStream({ count: 600, duplicateRate: 0.1, seed: 51, idPrefix: "good-" });
  const partitionOf = new Map<string, number>();
  const fixtures: FixtureRecord[] = [];
  [...kinds.values()].forEach((records, i) => {
    for (const record of records) {
      partitionOf.set(record.name, i % 3);
      fixtures.push(record);
    }
  });
  const kafka = testKafka();
  await produceRecords(kafka, topic, good.records.slice(0, 300));
  await produceRecords(
    kafka,
    topic,
    fixtures.map((r) => toProducerRecord(r, partitionOf.get(r.name)!)),
    { batchSize: 1 },
  );
  await produceRecords(kafka, topic, good.records.slice(300));

  const cli = startCli(
    [
      "run",
      "--projection",
      "ledger",
      "--topic",
      topic,
      "--group",
      group,
      "--database-url",
      stack.db.url,
      "--no-migrate",
    ],
    { REPLAYABLE_DLQ_TOPIC: dlqTopic, REPLAYABLE_MAX_BATCH_RECORDS: "50" },
  );
  onTestFailed(() => {
    process.stderr.write(
      `--- consumer stderr (last lines) ---\n${cli.stderr().split("\n").slice(-30).join("\n")}\n`,
    );
  });
  onTestFinished(async () => {
    cli.child.kill("SIGTERM");
    await cli.exited;
  });
  const port = await cli.metricsPort();
  // Committed offsets at the end of every partition: nothing blocked a partition.
  await waitForCaughtUp(stack.admin, group, topic, 180_000);

  // Every good record (and every fixture that should apply) applied exactly once.
  const effects = fixtures.flatMap((r) =>
    "applied" in r.expect
      ? [{ account: r.expect.applied.account, delta: BigInt(r.expect.applied.delta) }]
      : [],
  );
  expect(await ledgerChecksumOf(stack.db.pool)).toBe(combinedChecksum([good.expected], effects));

  // Every bad record in dead letters, once, with its exact bytes, partition and error code.
  const rows = (
    await stack.db.pool.query<DeadLetterRow>(
      `SELECT id, partition, "offset", key, value, headers, error_code, error_message, attempts,
              record_timestamp, published_at
       FROM replayable.dead_letters WHERE topic = $1 ORDER BY id`,
      [topic],
    )
  ).rows;
  const expected = fixtures.filter((r) => "deadLetter" in r.expect);
  expect(rows.length).toBe(expected.length);
  const byName = new Map(
    rows.map((row) => [decodeHeaders(row.headers)[FIXTURE_HEADER]?.[0]?.toString() ?? "?", row]),
  );
  for (const record of expected) {
    const row = byName.get(record.name);
    expect(row, record.name).toBeDefined();
    expect({ name: record.name, code: row!.error_code, partition: row!.partition }).toEqual({
      name: record.name,
      code: (record.expect as { deadLetter: string }).deadLetter,
      partition: partitionOf.get(record.name),
    });
    expect(sameBytes(row!.key, record.key), `${record.name} key`).toBe(true);
    expect(sameBytes(row!.value, record.value), `${record.name} value`).toBe(true);
    expect(decodeHeaders(row!.headers), `${record.name} headers`).toEqual(record.headers);
    expect(row!.attempts).toBe(1);
    expect(row!.record_timestamp).toBeInstanceOf(Date);
    expect(row!.error_message.length).toBeGreaterThan(0);
  }

  const m = (name: string, labels: Record<string, string> = {}) =>
    scrapeMetric(port, name, { topic, ...labels });
  expect(await m("replayable_records_dead_lettered_total")).toBe(expected.length);
  expect(await m("replayable_duplicates_total", { key: "event_id" })).toBe(
    good.duplicates + fixtures.filter((r) => "duplicate" in r.expect).length,
  );
  expect(await scrapeMetric(port, "replayable_transaction_retries_total")).toBe(0);

  // The same records on the DLQ topic, published after COMMIT, naming where they came from.
  expect(await scrapeMetric(port, "replayable_dlq_publishes_total", { result: "published" })).toBe(
    expected.length,
  );
  const published = await readTopic(kafka, dlqTopic);
  expect(published.length).toBe(expected.length);
  for (const message of published) {
    const name = message.headers[FIXTURE_HEADER]?.[0]?.toString() ?? "?";
    const row = byName.get(name)!;
    const record = fixtures.find((r) => r.name === name)!;
    expect(sameBytes(message.key, record.key), `${name} DLQ key`).toBe(true);
    expect(sameBytes(message.value, record.value), `${name} DLQ value`).toBe(true);
    const text = (header: string) => message.headers[header]?.[0]?.toString();
    expect({
      topic: text(DLQ_HEADERS.topic),
      partition: text(DLQ_HEADERS.partition),
      offset: text(DLQ_HEADERS.offset),
      code: text(DLQ_HEADERS.code),
      id: text(DLQ_HEADERS.deadLetterId),
    }).toEqual({
      topic,
      partition: String(row.partition),
      offset: row.offset,
      code: row.error_code,
      id: row.id,
    });
    for (const [header, values] of Object.entries(record.headers))
      expect(message.headers[header]).toEqual(values);
  }
  const unpublished = await stack.db.pool.query(
    "SELECT 1 FROM replayable.dead_letters WHERE published_at IS NULL",
  );
  expect(unpublished.rowCount).toBe(0);

  // No crash loop: the one process we started is still running and started once.
  expect(cli.child.exitCode).toBeNull();
  expect(cli.stderr().match(/"msg":"starting"/g)?.length).toBe(1);
  expect(await scrapeMetric(port, "replayable_rebalances_total")).toBe(1);
});
