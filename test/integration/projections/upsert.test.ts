/**
 * The zero-code upsert sink against real Kafka and PostgreSQL: the table equals a model of the
 * stream applied record by record, bad records are dead-lettered naming the field, a replay from
 * earliest changes nothing and counts duplicates, and the set-based apply leaves the same table
 * and dead letters as the per-record apply. Both modes: upsert and insert.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { produceRecords, type ProducerRecord } from "../../../src/kafka/producer.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { upsertProjection } from "../../../src/projections/upsert/upsertProjection.js";
import {
  parseUpsertProjectionSpec,
  type UpsertProjectionDeclaration,
} from "../../../src/projections/upsert/upsertProjectionSpec.js";
import { validateUpsertProjection } from "../../../src/projections/upsert/validateUpsertProjection.js";
import { seededRandom } from "../../../src/support/random.js";
import { replay } from "../../../src/replay/replay.js";
import { tableChecksums } from "../../../src/sql/tableChecksums.js";
import { metricOf, runUntilCaughtUp } from "../../helpers/inProcess.js";
import {
  createTestDatabase,
  testKafka,
  uniqueName,
  useStack,
  waitFor,
  type TestDatabase,
} from "../../helpers/stack.js";

const stack = useStack();

interface DeadLetterRow {
  readonly partition: number;
  readonly offset: string;
  readonly code: string;
  readonly message: string;
  readonly value: Buffer | null;
}

async function deadLetters(db: TestDatabase): Promise<DeadLetterRow[]> {
  const r = await db.pool.query<DeadLetterRow>(
    `SELECT partition, "offset"::text AS offset, error_code AS code, error_message AS message, value
       FROM replayable.dead_letters ORDER BY error_message COLLATE "C", partition, "offset"`,
  );
  return r.rows;
}

/**
 * Runs the sink over the topic into `db` (batches of at most 40 records, so keys repeat within a
 * batch), then resets the group to earliest and runs again: the table must not change and every
 * record must count as a duplicate.
 */
async function runAndReplay(
  db: TestDatabase,
  projection: Projection<unknown>,
  topic: string,
  total: number,
  duplicateKey: "offset" | "event_id",
) {
  const group = uniqueName("g");
  const env = { REPLAYABLE_MAX_BATCH_RECORDS: "40", REPLAYABLE_PROJECTION: projection.name };
  const first = await runUntilCaughtUp(stack.admin, { projection, databaseUrl: db.url, topic, group, env });
  const tables = await tableChecksums(db.pool, projection.tables);
  // The stopped member's advisory-lock session ends a moment after stop() resolves (the backend
  // exits after the socket closes): retry while the projection is still locked.
  const outcome = await waitFor("replay --to-earliest --execute", async () => {
    const result = await replay({
      admin: stack.admin,
      pool: db.pool,
      groupId: group,
      projection: projection.name,
      scope: { topics: [{ topic }] },
      spec: { kind: "to-earliest" },
      execute: true,
      log: createLogger("warn"),
    });
    return result.kind === "refused" && result.reason === "PROJECTION_LOCKED" ? undefined : result;
  });
  expect(outcome.kind, JSON.stringify(outcome)).toBe("executed");
  const again = await runUntilCaughtUp(stack.admin, { projection, databaseUrl: db.url, topic, group, env });
  expect(await tableChecksums(db.pool, projection.tables)).toEqual(tables);
  expect(await metricOf(again, "replayable_records_applied_total")).toBe(0);
  expect(await metricOf(again, "replayable_records_dead_lettered_total")).toBe(0);
  // Records below the checkpoint are offset duplicates, whatever the dedupe key. Each delivery
  // counts: a rebalance during the run (a loaded machine, where the join waits out a slow leave)
  // delivers the batches handled since the last commit again, so the count is exact only when the
  // member joined once (seen once in CI: 723 for 607 records).
  const offsetDuplicates = await metricOf(again, "replayable_duplicates_total", { key: "offset" });
  if ((await metricOf(again, "replayable_rebalances_total")) === 1) expect(offsetDuplicates).toBe(total);
  else expect(offsetDuplicates).toBeGreaterThanOrEqual(total);
  return {
    tables,
    deadLetters: await deadLetters(db),
    applied: await metricOf(first, "replayable_records_applied_total"),
    duplicates: await metricOf(first, "replayable_duplicates_total", { key: duplicateKey }),
  };
}

/** A fresh database with `ddl` run in it (the test's own database for the first run). */
async function withTable(ddl: string, fresh: boolean): Promise<TestDatabase> {
  const db = fresh ? await createTestDatabase() : stack.db;
  if (fresh) onTestFinished(() => db.drop());
  await db.pool.query(ddl);
  return db;
}

/** The spec of `declaration`, validated against its table (`ddl`, run in the test's database), and a new topic. */
async function prepare(
  declaration: UpsertProjectionDeclaration,
  ddl: string,
  prefix: string,
  partitions: number,
) {
  const spec = parseUpsertProjectionSpec(declaration);
  expect(await validateUpsertProjection(spec, (await withTable(ddl, false)).pool)).toEqual([]);
  const topic = uniqueName(prefix);
  await stack.admin.createTopic(topic, partitions);
  return { spec, topic };
}

/**
 * {@link runAndReplay} with the set-based apply (into the test's database), then with the
 * per-record apply (into a fresh database with the same `ddl`); `check` reads the table after each.
 */
async function bothApplies(
  spec: ReturnType<typeof parseUpsertProjectionSpec>,
  ddl: string,
  topic: string,
  total: number,
  duplicateKey: "offset" | "event_id",
  check: (db: TestDatabase, label: string) => Promise<void>,
) {
  const runs = [];
  for (const [i, projection] of [
    upsertProjection(spec),
    { ...upsertProjection(spec), applyBatch: undefined },
  ].entries()) {
    const db = i === 0 ? stack.db : await withTable(ddl, true);
    runs.push(await runAndReplay(db, projection, topic, total, duplicateKey));
    await check(db, i === 0 ? "batch apply" : "per-record apply");
  }
  return runs;
}

describe("upsert sink, upsert mode", () => {
  const DDL = `CREATE SCHEMA sink;
    CREATE TABLE sink.customers (
      id bigint PRIMARY KEY,
      name varchar(20),
      balance numeric(12, 2),
      seen_at timestamptz,
      tags jsonb,
      note text NOT NULL DEFAULT 'new'
    )`;
  const declaration: UpsertProjectionDeclaration = {
    kind: "upsert",
    name: "customers",
    topics: ["unused"],
    table: "sink.customers",
    mode: "upsert",
    key: { from: "record-key", column: "id", type: "bigint" },
    columns: {
      name: { type: "text" },
      balance: { type: "numeric" },
      seen_at: { field: "seenAt", type: "timestamptz" },
      tags: { type: "jsonb" },
    },
    deleteOnTombstone: true,
  };

  interface Row {
    id: string;
    name: string | null;
    balance: string | null;
    seen_ms: string | null;
    tags: unknown;
  }

  it("equals a model of the stream; bad records are dead-lettered; replay and per-record apply agree", async () => {
    const { spec, topic } = await prepare(declaration, DDL, "upsert", 3);

    // The stream, and the table it must leave: each key's records in produce order = offset order.
    const random = seededRandom(12);
    const model = new Map<string, Row>();
    const records: ProducerRecord[] = [];
    for (let i = 0; i < 600; i++) {
      const id = String(1 + Math.floor(random() * 25));
      if (random() < 0.2) {
        records.push({ key: id, value: null });
        model.delete(id);
        continue;
      }
      const cents = Math.floor(random() * 1_000_000);
      const value: Record<string, unknown> = {
        name: `c${i}`,
        balance: cents / 100,
        seenAt: 1_767_225_600_000 + i,
      };
      if (random() < 0.3) value.tags = { i, even: i % 2 === 0 };
      if (random() < 0.1) delete value.name; // absent field: NULL
      records.push({ key: id, value: JSON.stringify(value) });
      model.set(id, {
        id,
        name: (value.name as string | undefined) ?? null,
        balance: (cents / 100).toFixed(2),
        seen_ms: String(value.seenAt),
        tags: value.tags ?? null,
      });
    }
    // A delete then an upsert of one key in one batch must leave the row.
    records.push({ key: "26", value: JSON.stringify({ name: "before" }) }, { key: "26", value: null });
    records.push({ key: "26", value: JSON.stringify({ name: "after", balance: "1.5" }) });
    model.set("26", { id: "26", name: "after", balance: "1.50", seen_ms: null, tags: null });
    const bad: ProducerRecord[] = [
      { key: "3", value: JSON.stringify({ name: "x", balance: "lots" }) },
      { key: null, value: JSON.stringify({ name: "no key" }) },
      { key: "abc", value: JSON.stringify({ name: "bad key" }) },
      // Passes decode, refused by PostgreSQL (varchar(20), SQLSTATE 22001): the batch falls back.
      { key: "4", value: JSON.stringify({ name: "a name far too long for the column" }) },
    ];
    const all = [...records.slice(0, 300), ...bad, ...records.slice(300)];
    await produceRecords(testKafka(), topic, all);

    const runs = await bothApplies(spec, DDL, topic, all.length, "offset", async (db, label) => {
      const rows = await db.pool.query<Row>(
        `SELECT id::text, name, balance::text AS balance,
                (extract(epoch FROM seen_at) * 1000)::bigint::text AS seen_ms, tags
           FROM sink.customers ORDER BY customers.id`,
      );
      const expected = [...model.values()].sort((a, b) => Number(a.id) - Number(b.id));
      expect(rows.rows, label).toEqual(expected);
      const notes = await db.pool.query<{ note: string }>(`SELECT DISTINCT note FROM sink.customers`);
      expect(notes.rows, label).toEqual([{ note: "new" }]);
    });
    const [batch, perRecord] = runs;
    expect(batch!.applied).toBe(all.length - bad.length);
    expect(batch!.deadLetters.map((d) => [d.code, d.message, d.value?.toString()])).toEqual([
      [
        "DECODE_FAILED",
        'field "balance" (column balance, numeric) must be a JSON number, or a string holding a decimal number, got "lots"',
        bad[0]!.value,
      ],
      [
        "DECODE_FAILED",
        "the record has no key (null); key column id comes from the record key",
        bad[1]!.value,
      ],
      [
        "DECODE_FAILED",
        'the record key (key column id, bigint) must be a whole number from -9223372036854775808 to 9223372036854775807, got "abc"',
        bad[2]!.value,
      ],
      ["APPLY_REJECTED", "value too long for type character varying(20) (SQLSTATE 22001)", bad[3]!.value],
    ]);
    expect(batch).toEqual(perRecord);
  });
});

describe("upsert sink, a varchar(n) key", () => {
  // PostgreSQL stores a text longer than varchar(n) whose excess is spaces cut to n characters
  // ("Character Types"): two keys the batch told apart could name one row.
  const DDL = `CREATE SCHEMA sink; CREATE TABLE sink.codes (id varchar(3) PRIMARY KEY, name text)`;
  const declaration: UpsertProjectionDeclaration = {
    kind: "upsert",
    name: "codes",
    topics: ["unused"],
    table: "sink.codes",
    mode: "upsert",
    key: { from: "record-key", column: "id", type: "text" },
    columns: { name: { type: "text" } },
    deleteOnTombstone: true,
  };

  it("regression: a write of 'abc ' and a tombstone of 'abc' in one batch delete the row, as record by record (break-it review)", async () => {
    const { spec, topic } = await prepare(declaration, DDL, "upsert-varchar", 1);
    const records: ProducerRecord[] = [
      { key: "abc ", value: JSON.stringify({ name: "written" }) },
      { key: "abc", value: null },
      { key: "de", value: JSON.stringify({ name: "kept" }) },
      // Cut to "de " (3 characters), another key than "de".
      { key: "de  ", value: JSON.stringify({ name: "last" }) },
      { key: "fg ", value: null },
      { key: "fg", value: JSON.stringify({ name: "after the tombstone" }) },
    ];
    await produceRecords(testKafka(), topic, records);
    const model = [
      { id: "de", name: "kept" },
      { id: "de ", name: "last" },
      { id: "fg", name: "after the tombstone" },
    ];
    const runs = await bothApplies(spec, DDL, topic, records.length, "offset", async (db, label) => {
      const rows = await db.pool.query(`SELECT id, name FROM sink.codes ORDER BY id COLLATE "C"`);
      expect(rows.rows, label).toEqual(model);
    });
    expect(runs[0]!.deadLetters).toEqual([]);
    expect(runs[0]).toEqual(runs[1]);
  });

  it("regression: the tombstone of a key PostgreSQL cut on write deletes its row (break-it review)", async () => {
    // The write stores "xy " (the excess spaces cut to 3 characters); the tombstone's key, compared
    // as sent ("xy     "), found no row, and both records counted as applied.
    const { spec, topic } = await prepare(declaration, DDL, "upsert-varchar-cut", 1);
    const records: ProducerRecord[] = [
      { key: "xy     ", value: JSON.stringify({ name: "written" }) },
      { key: "xy     ", value: null },
      { key: "xy", value: JSON.stringify({ name: "another key" }) },
      { key: "zw   ", value: JSON.stringify({ name: "cut, kept" }) },
      // Not "zw " once cut: its excess is not only spaces, so it names no row (its write would fail).
      { key: "zw  x", value: null },
    ];
    await produceRecords(testKafka(), topic, records);
    const runs = await bothApplies(spec, DDL, topic, records.length, "offset", async (db, label) => {
      const rows = await db.pool.query(`SELECT id, name FROM sink.codes ORDER BY id COLLATE "C"`);
      expect(rows.rows, label).toEqual([
        { id: "xy", name: "another key" },
        { id: "zw ", name: "cut, kept" },
      ]);
    });
    expect(runs[0]!.deadLetters).toEqual([]);
    expect(runs[0]).toEqual(runs[1]);
  });
});

describe("upsert sink, insert mode", () => {
  const DDL = `CREATE SCHEMA sink;
    CREATE TABLE sink.orders (
      tenant integer,
      id text,
      amount bigint NOT NULL,
      PRIMARY KEY (tenant, id)
    )`;
  const declaration: UpsertProjectionDeclaration = {
    kind: "upsert",
    name: "orders",
    topics: ["unused"],
    table: "sink.orders",
    mode: "insert",
    dedupe: { kind: "event-id", header: "ce_id" },
    key: [
      { from: "record-key", name: "tenant", column: "tenant", type: "integer" },
      { from: "record-key", name: "id", column: "id" },
    ],
    columns: { amount: { type: "bigint", required: true } },
    deleteOnTombstone: true,
  };

  it("inserts each key once, dead-letters a second insert, deletes on tombstones; replay and per-record apply agree", async () => {
    const { spec, topic } = await prepare(declaration, DDL, "insert", 2);

    const random = seededRandom(7);
    const model = new Map<string, string>();
    const records: ProducerRecord[] = [];
    let conflicts = 0;
    let resent = 0;
    for (let i = 0; i < 500; i++) {
      if (i > 0 && random() < 0.05) {
        records.push(records[Math.floor(random() * records.length)]!); // a producer retry: same ce_id
        resent += 1;
        continue;
      }
      const tenant = 1 + Math.floor(random() * 3);
      const id = `o-${Math.floor(random() * 10)}`;
      const key = JSON.stringify({ tenant, id });
      const headers = { ce_id: `e-${i}` };
      // A key present is mostly deleted; a few times inserted again (a conflict, dead-lettered),
      // rarely enough that most batches take the set-based path without falling back.
      if (model.has(key) && i % 97 !== 0) {
        records.push({ key, value: null, headers });
        model.delete(key);
      } else {
        const amount = 1 + Math.floor(random() * 1000);
        records.push({ key, value: JSON.stringify({ amount }), headers });
        if (model.has(key)) conflicts += 1;
        else model.set(key, String(amount));
      }
    }
    const badAmount = { key: JSON.stringify({ tenant: 1, id: "o-bad" }), value: '{"amount": "many"}' };
    const noAmount = { key: JSON.stringify({ tenant: 1, id: "o-none" }), value: "{}" };
    const noTenant = { key: JSON.stringify({ id: "o-1" }), value: '{"amount": 1}' };
    const bad: ProducerRecord[] = [badAmount, noAmount, noTenant].map((r, i) => ({
      ...r,
      headers: { ce_id: `bad-${i}` },
    }));
    const all = [...records.slice(0, 250), ...bad, ...records.slice(250)];
    await produceRecords(testKafka(), topic, all);
    expect(conflicts).toBeGreaterThan(0);

    const runs = await bothApplies(spec, DDL, topic, all.length, "event_id", async (db, label) => {
      const rows = await db.pool.query<{ key: string; amount: string }>(
        `SELECT json_build_object('tenant', tenant, 'id', id)::text AS key, amount::text FROM sink.orders`,
      );
      const actual = new Map(rows.rows.map((r) => [JSON.stringify(JSON.parse(r.key)), r.amount]));
      expect(actual, label).toEqual(model);
    });
    const [batch, perRecord] = runs;
    expect(batch!.duplicates).toBe(resent);
    expect(batch!.applied).toBe(all.length - resent - bad.length - conflicts);
    const messages = batch!.deadLetters.map((d) => `${d.code} ${d.message}`);
    expect(messages.filter((m) => m.startsWith("APPLY_REJECTED duplicate key value"))).toHaveLength(
      conflicts,
    );
    expect(messages.filter((m) => m.startsWith("DECODE_FAILED"))).toEqual([
      'DECODE_FAILED field "amount" (column amount) is missing or null',
      'DECODE_FAILED field "amount" (column amount, bigint) must be a whole number from -9223372036854775808 to 9223372036854775807 (a JSON number below 2^53, or a string of digits), got "many"',
      'DECODE_FAILED field "tenant" of the record key (key column tenant, integer) is missing or null',
    ]);
    expect(batch).toEqual(perRecord);
  });
});
