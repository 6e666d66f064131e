/**
 * The zero-code upsert sink declared in a config file (docs/upsert-sink.md), through the CLI in a
 * subprocess from a folder outside the repository: `run` until caught up (upserts, a tombstone
 * deleting a row, a bad record dead-lettered naming the field), `replay --to-earliest --execute`
 * then `run` again (table unchanged, duplicates counted); and a mapping the database contradicts is
 * refused at start-up with every problem listed, exit 2.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, scrapeMetric, startCliInTest } from "../../helpers/process.js";
import { BROKERS, testKafka, uniqueName, useStack, waitForCaughtUp } from "../../helpers/stack.js";
import { writeOneMigration } from "../../helpers/migrationFolder.js";

const stack = useStack();

function tempFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "replayable-upsert-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeConfig(dir: string, topic: string, columns: string): void {
  writeFileSync(
    join(dir, "replayable.config.mjs"),
    `import { defineConfig } from "replayable";
export default defineConfig({
  projections: [
    {
      kind: "upsert",
      name: "customers",
      topics: [${JSON.stringify(topic)}],
      table: "crm.customers",
      mode: "upsert",
      key: { from: "record-key", column: "id", type: "bigint" },
      columns: ${columns},
      deleteOnTombstone: true,
    },
  ],
});
`,
  );
}

/** A line of retry's table: id, record and the start of its outcome, as columns. */
function line(id: string, record: string, outcome: string): RegExp {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escape(id)} +${escape(record)} +${escape(outcome)}`, "m");
}

async function rows(): Promise<string[]> {
  const r = await stack.db.pool.query<{ row: string }>(
    "SELECT id || ':' || email || ':' || visits AS row FROM crm.customers ORDER BY id",
  );
  return r.rows.map((x) => x.row);
}

it("an upsert sink from the config file: upserts, a tombstone, a bad field dead-lettered; a replay leaves the table unchanged", async () => {
  const topic = uniqueName("customers");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 2);
  await stack.db.pool.query(
    "CREATE SCHEMA crm; CREATE TABLE crm.customers (id bigint PRIMARY KEY, email text NOT NULL, visits integer)",
  );
  const dir = tempFolder();
  writeConfig(dir, topic, `{ email: { type: "text", required: true }, visits: { type: "integer" } }`);
  const json = (email: string, visits: number | string) => JSON.stringify({ email, visits });
  await produceRecords(testKafka(), topic, [
    { key: "1", value: json("a@x", 1), partition: 0 },
    { key: "2", value: json("b@x", 1), partition: 1 },
    { key: "1", value: json("a2@x", 2), partition: 0 },
    { key: "3", value: json("c@x", 1), partition: 0 },
    { key: "3", value: null, partition: 0 }, // tombstone: deletes 3
    { key: "2", value: json("b@x", "many"), partition: 1 }, // not an integer: dead letter
    { key: "4", value: json("d@x", 7), partition: 1 },
  ]);
  const env = { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url, REPLAYABLE_GROUP_ID: group };
  const first = startCliInTest(["run", "--no-migrate"], env, { cwd: dir });
  await waitForCaughtUp(stack.admin, group, topic);
  expect(await rows()).toEqual(["1:a2@x:2", "2:b@x:1", "4:d@x:7"]);
  first.child.kill("SIGTERM");
  expect((await first.exited).code).toBe(0);
  const letters = await stack.db.pool.query<{ message: string }>(
    "SELECT error_message AS message FROM replayable.dead_letters WHERE projection = 'customers'",
  );
  expect(letters.rows).toHaveLength(1);
  expect(letters.rows[0]!.message).toContain("visits");

  const replay = await runCli(
    ["replay", "--group", group, "--topic", topic, "--to-earliest", "--execute"],
    env,
    {
      cwd: dir,
    },
  );
  expect(replay.code, replay.stderr).toBe(0);
  const again = startCliInTest(["run", "--no-migrate"], env, { cwd: dir });
  const port = await again.metricsPort();
  await waitForCaughtUp(stack.admin, group, topic);
  expect(await rows()).toEqual(["1:a2@x:2", "2:b@x:1", "4:d@x:7"]);
  expect(await scrapeMetric(port, "replayable_duplicates_total", { key: "offset" })).toBe(7);
  expect(await scrapeMetric(port, "replayable_records_applied_total")).toBe(0);
});

it("regression: an upsert sink's missing table is refused with a fix the sink can follow (break-it review)", async () => {
  // It said to add a migrations folder (defineProjection({ migrations })), which a sink has no field for.
  const topic = uniqueName("customers");
  await stack.admin.createTopic(topic, 1);
  const dir = tempFolder();
  writeConfig(dir, topic, `{ email: { type: "text" } }`);
  const run = await runCli(
    ["run", "--no-migrate"],
    { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url },
    { cwd: dir },
  );
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain("projection customers: table crm.customers does not exist in the database");
  expect(run.stderr).toContain("the sink writes to a table it does not create");
  expect(run.stderr).not.toContain("defineProjection({ migrations })");
});

it("an upsert sink whose mapping the database contradicts is refused at start-up with every problem, exit 2", async () => {
  const topic = uniqueName("customers");
  await stack.admin.createTopic(topic, 1);
  await stack.db.pool.query(
    "CREATE SCHEMA crm; CREATE TABLE crm.customers (id bigint PRIMARY KEY, email text NOT NULL, visits integer)",
  );
  const dir = tempFolder();
  writeConfig(
    dir,
    topic,
    `{ email: { type: "text" }, visits: { type: "uuid" }, nickname: { type: "text" } }`,
  );
  const run = await runCli(
    ["run", "--no-migrate"],
    { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url },
    {
      cwd: dir,
    },
  );
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain("nickname");
  expect(run.stderr).toContain("visits");
  // Regression (break-it review): `dead-letters retry --execute` applies records too, and went on to
  // fail each letter with PostgreSQL's message naming neither the field nor the fix.
  const retry = await runCli(
    ["dead-letters", "retry", "--execute"],
    { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url },
    { cwd: dir },
  );
  expect(retry.code, retry.stderr).toBe(2);
  expect(retry.stderr).toContain("nickname");
  expect(retry.stderr).toContain("visits");
});

it("regression: the sink's table made by another projection's migration: migrate applies it (it refused before migrating)", async () => {
  const topic = uniqueName("customers");
  await stack.admin.createTopic(topic, 1);
  const dir = tempFolder();
  writeOneMigration(
    join(dir, "migrations", "crm"),
    "crm",
    "CREATE SCHEMA IF NOT EXISTS crm;\n--> statement-breakpoint\nCREATE TABLE crm.customers (id bigint PRIMARY KEY, email text NOT NULL, visits integer);\n",
  );
  writeFileSync(
    join(dir, "replayable.config.mjs"),
    `import { defineConfig, defineProjection } from "replayable";
export default defineConfig({
  projections: [
    defineProjection({
      name: "crm_setup",
      dedupe: { kind: "offset" },
      topics: [${JSON.stringify(topic)}],
      tables: ["crm.customers"],
      migrations: "./migrations/crm",
      decode: (record) => record.value,
      async apply() {},
    }),
    {
      kind: "upsert",
      name: "customers",
      topics: [${JSON.stringify(topic)}],
      table: "crm.customers",
      key: { from: "record-key", column: "id", type: "bigint" },
      columns: { email: { type: "text" }, visits: { type: "integer" } },
    },
  ],
});
`,
  );
  const migrated = await runCli(["migrate"], { DATABASE_URL: stack.db.url }, { cwd: dir });
  expect(migrated.code, migrated.stderr).toBe(0);
  const table = await stack.db.pool.query("SELECT to_regclass('crm.customers') IS NOT NULL AS present");
  expect(table.rows[0]).toEqual({ present: true });
});

it("regression: dead-letters retry of a sink's letter refuses it after later records of its partition were applied, unless --out-of-order (it overwrote the newer value of the key; break-it review)", async () => {
  const topic = uniqueName("customers");
  const group = uniqueName("g");
  await stack.admin.createTopic(topic, 1);
  await stack.db.pool.query(
    "CREATE SCHEMA crm; CREATE TABLE crm.customers (id bigint PRIMARY KEY, email varchar(5) NOT NULL, visits integer)",
  );
  const dir = tempFolder();
  writeConfig(dir, topic, `{ email: { type: "text", required: true }, visits: { type: "integer" } }`);
  const json = (email: string, visits: number) => JSON.stringify({ email, visits });
  await produceRecords(testKafka(), topic, [
    { key: "1", value: json("old@x.y", 1), partition: 0 }, // too long for varchar(5): dead letter
    { key: "1", value: json("a@x", 2), partition: 0 }, // the newer value of key 1
    { key: "2", value: json("next@x.y", 1), partition: 0 }, // too long: dead letter
    { key: "3", value: json("last@x.y", 1), partition: 0 }, // too long: dead letter, the partition's last record
  ]);
  const env = { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url, REPLAYABLE_GROUP_ID: group };
  const member = startCliInTest(["run", "--no-migrate"], env, { cwd: dir });
  await waitForCaughtUp(stack.admin, group, topic);
  member.child.kill("SIGTERM");
  expect((await member.exited).code).toBe(0);
  expect(await rows()).toEqual(["1:a@x:2"]);
  await stack.db.pool.query("ALTER TABLE crm.customers ALTER COLUMN email TYPE text"); // the fix
  const letters = await stack.db.pool.query<{ id: string; offset: string }>(
    `SELECT id, "offset" FROM replayable.dead_letters WHERE projection = 'customers' ORDER BY "offset"`,
  );
  const [first, next, last] = letters.rows;
  expect(letters.rows.map((l) => l.offset)).toEqual(["0", "2", "3"]);
  const refusal =
    "not retried: 1 offset after it in its partition (checkpoint 4) hold records applied already";

  // The dry run says which letters --execute would not retry; the letters after the applied record
  // are each followed only by dead letters (regression: a run of letters refused all but the last).
  const dry = await runCli(["dead-letters", "retry"], env, { cwd: dir });
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toContain(
    `--execute would not retry 1 of them unless --out-of-order: ${first!.id} (1 offset`,
  );
  // Regression: the JSON dry run left that out (review finding).
  const dryJson = await runCli(["dead-letters", "retry", "--output", "json"], env, { cwd: dir });
  expect(dryJson.code, dryJson.stderr).toBe(0);
  const predicted = JSON.parse(dryJson.stdout) as { wouldNotRetry: { id: string; reason: string }[] };
  expect(predicted.wouldNotRetry.map((r) => r.id)).toEqual([first!.id]);
  expect(predicted.wouldNotRetry[0]!.reason).toContain("1 offset after it in its partition (checkpoint 4)");

  const retried = await runCli(["dead-letters", "retry", "--execute"], env, { cwd: dir });
  expect(retried.code, retried.stderr).toBe(1);
  expect(retried.stdout).toMatch(line(first!.id, `${topic}/0@0`, refusal));
  expect(retried.stdout).toMatch(line(next!.id, `${topic}/0@2`, "applied; resolved"));
  expect(retried.stdout).toMatch(line(last!.id, `${topic}/0@3`, "applied; resolved"));
  expect(retried.stderr).toContain("replayable: 1 of 3 dead letters were not retried");
  // Regression: the summary and JSON's `retried` counted the letter not retried as retried.
  expect(retried.stdout).toContain(
    "3 dead letters, 2 retried: 2 applied, 0 duplicate, 0 failed again; 0 superseded by a rebuild, 1 not retried after later records, 0 already resolved",
  );
  const again = await runCli(["dead-letters", "retry", "--execute", "--output", "json"], env, { cwd: dir });
  expect(again.code, again.stderr).toBe(1);
  const report = JSON.parse(again.stdout) as {
    letters: number;
    retried: number;
    results: { kind: string }[];
  };
  expect(report).toMatchObject({ letters: 1, retried: 0, results: [{ kind: "later_records" }] });
  expect(await rows()).toEqual(["1:a@x:2", "2:next@x.y:1", "3:last@x.y:1"]);
  const unresolved = await stack.db.pool.query(
    "SELECT attempts FROM replayable.dead_letters WHERE id = $1 AND resolved_at IS NULL",
    [first!.id],
  );
  expect(unresolved.rows).toEqual([{ attempts: 1 }]);

  const forced = await runCli(["dead-letters", "retry", "--execute", "--out-of-order"], env, { cwd: dir });
  expect(forced.code, forced.stderr).toBe(0);
  expect(forced.stdout).toMatch(line(first!.id, `${topic}/0@0`, "applied; resolved"));
  expect(await rows()).toEqual(["1:old@x.y:1", "2:next@x.y:1", "3:last@x.y:1"]);
});
