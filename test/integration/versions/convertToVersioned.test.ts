/**
 * A plain projection converted to a versioned one in place (`migrate --convert-to-versioned`,
 * docs/replay.md "Converting a plain projection"), against the real Kafka and PostgreSQL: a plain
 * member applies part of the log; the same projection declared versioned is refused by `migrate`
 * with the flag named; with the flag, a changed table shape, or a member of the plain projection
 * running, is refused changing nothing; an equal shape becomes version 1 with its rows, dedupe state
 * and consumer group: after a replay from the earliest offsets its member applies only the records
 * the plain member had not, and the tables are what the model of the log says.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, startCliInTest } from "../../helpers/process.js";
import {
  BROKERS,
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
} from "../../helpers/stack.js";
import { sales, tempFolder, writeVersionedConfig } from "../../helpers/versionedConfig.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

/**
 * The plain projection `name` in `dir`: the same sums as the versioned one of
 * writeVersionedConfig, with its table in schema `name`, named so by its migration and its code.
 */
function writePlainConfig(dir: string, name: string, topic: string): void {
  const folder = join(dir, "migrations");
  mkdirSync(join(folder, "meta"), { recursive: true });
  writeFileSync(
    join(folder, "0000_plain.sql"),
    `CREATE SCHEMA "${name}";\n--> statement-breakpoint\nCREATE TABLE "${name}"."totals" ("shop" text PRIMARY KEY NOT NULL, "sales" bigint NOT NULL, "cents" bigint NOT NULL);\n`,
  );
  writeFileSync(
    join(folder, "meta", "_journal.json"),
    JSON.stringify({
      version: "7",
      dialect: "postgresql",
      entries: [{ idx: 0, version: "7", when: 1767225600000, tag: "0000_plain", breakpoints: true }],
    }),
  );
  writeFileSync(
    join(dir, "replayable.config.ts"),
    `import { defineConfig, defineProjection } from "replayable";

interface Sale { id: string; shop: string; cents: number }

const sales = defineProjection<Sale>({
  name: ${JSON.stringify(name)},
  dedupe: { kind: "offset" as const },
  topics: [${JSON.stringify(topic)}],
  tables: [${JSON.stringify(`${name}.totals`)}],
  migrations: "./migrations",
  decode: (record) => JSON.parse(record.value?.toString("utf8") ?? "") as Sale,
  async apply({ client }, { value }) {
    await client.query(
      'INSERT INTO "${name}".totals (shop, sales, cents) VALUES ($1, 1, $2) ON CONFLICT (shop) DO UPDATE SET sales = totals.sales + 1, cents = totals.cents + excluded.cents',
      [value.shop, value.cents],
    );
  },
});

export default defineConfig({ kafkaBrokers: ${JSON.stringify(BROKERS)}, projections: [sales] });
`,
  );
}

/** The totals the first `count` sales make: per shop, their number and the sum of their cents. */
function model(count: number): { shop: string; sales: string; cents: string }[] {
  const byShop = new Map<string, { sales: number; cents: number }>();
  for (const s of sales(count)) {
    const sale = JSON.parse(s.value) as { shop: string; cents: number };
    const t = byShop.get(sale.shop) ?? { sales: 0, cents: 0 };
    byShop.set(sale.shop, { sales: t.sales + 1, cents: t.cents + sale.cents });
  }
  return [...byShop.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([shop, t]) => ({ shop, sales: String(t.sales), cents: String(t.cents) }));
}

describe("migrate --convert-to-versioned", () => {
  it("keeps a plain projection's rows, dedupe state and group as version 1; a changed shape is refused first, changing nothing", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const name = uniqueName("conv");
    const topic = uniqueName("conv-topic");
    await admin.createTopic(topic, 2);
    await produceRecords(testKafka(), topic, sales(30));
    const env = { DATABASE_URL: db.url };

    // The plain projection applies the first 30 sales, as group `name`.
    const plainDir = tempFolder();
    writePlainConfig(plainDir, name, topic);
    const plain = startCliInTest(["run"], env, { cwd: plainDir });
    await waitForCaughtUp(admin, name, topic);
    plain.signal("SIGTERM");
    expect((await plain.exited).code, plain.stderr()).toBe(0);
    const totals = async (table: string) =>
      (
        await db.pool.query<{ shop: string; sales: string; cents: string }>(
          `SELECT shop, sales::text, cents::text FROM ${table} ORDER BY shop`,
        )
      ).rows;
    expect(await totals(`"${name}".totals`)).toEqual(model(30));
    const checkpoints = async (key: string) =>
      (
        await db.pool.query<{ partition: number; offset: string }>(
          `SELECT partition, next_offset::text AS offset FROM replayable.checkpoints WHERE projection = $1 ORDER BY partition`,
          [key],
        )
      ).rows;
    const plainCheckpoints = await checkpoints(name);
    expect(plainCheckpoints).toHaveLength(2);

    // The same projection, now declared versioned: migrate refuses and names the flag.
    const versionedDir = tempFolder();
    writeVersionedConfig(versionedDir, name, topic);
    const cli = (args: string[], extra: Record<string, string> = {}) =>
      runCli(args, { ...env, ...extra }, { cwd: versionedDir });
    const refused = await cli(["migrate"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`schema ${name} holds the tables ${name}.totals`);
    expect(refused.stderr).toContain("replayable migrate --convert-to-versioned");

    const unchanged = async () => {
      const versions = await db.pool.query(
        "SELECT 1 FROM replayable.projection_versions WHERE projection = $1",
        [name],
      );
      const schemas = await db.pool.query<{ nspname: string }>(
        "SELECT nspname FROM pg_namespace WHERE nspname = $1",
        [`${name}_v1`],
      );
      const journal = await db.pool.query("SELECT to_regclass($1) AS t", [
        `replayable."__drizzle_migrations_${name}@v1"`,
      ]);
      expect(versions.rowCount).toBe(0);
      expect(schemas.rows).toEqual([]);
      expect(journal.rows).toEqual([{ t: null }]);
      expect(await totals(`"${name}".totals`)).toEqual(model(30));
      expect(await checkpoints(name)).toEqual(plainCheckpoints);
    };
    await unchanged();

    // A versioned code whose migrations make another shape (a column more): refused, nothing changed.
    const changed = await cli(["migrate", "--convert-to-versioned"], { BG_VARIANT: "changed" });
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain(
      `projection ${name} cannot be converted to versioned in place: the tables its versioned migrations make`,
    );
    expect(changed.stderr).toContain(
      "table totals: columns (shop text NOT NULL, sales bigint NOT NULL, cents bigint NOT NULL) exist, the migrations make (shop text NOT NULL, sales bigint NOT NULL, cents bigint NOT NULL, note text NOT NULL DEFAULT 'changed'::text)",
    );
    await unchanged();

    // While a member of the plain projection runs, the conversion is refused.
    const running = startCliInTest(["run"], env, { cwd: plainDir });
    await waitFor("the running member's shared advisory lock", async () => {
      const held = await db.pool.query(
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      return held.rowCount === 1 ? true : undefined;
    });
    const busy = await cli(["migrate", "--convert-to-versioned"]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`projection ${name} cannot be converted while a member of it runs`);
    running.signal("SIGTERM");
    expect((await running.exited).code, running.stderr()).toBe(0);
    await unchanged();

    const converted = await cli(["migrate", "--convert-to-versioned"]);
    expect(converted.code, converted.stderr).toBe(0);
    expect(converted.stdout).toContain(
      `converted ${name} to versioned in place: version 1 (schema ${name}_v1) is live with consumer group ${name}; views ${name}.totals; engine rows re-keyed to ${name}@v1: checkpoints 2,`,
    );
    const versions = await db.pool.query(
      "SELECT version, schema_name, group_id, state FROM replayable.projection_versions WHERE projection = $1",
      [name],
    );
    expect(versions.rows).toEqual([{ version: 1, schema_name: `${name}_v1`, group_id: name, state: "live" }]);
    expect(await totals(`"${name}_v1".totals`)).toEqual(model(30));
    expect(await totals(`"${name}".totals`)).toEqual(model(30));
    expect(await checkpoints(`${name}@v1`)).toEqual(plainCheckpoints);
    expect(await checkpoints(name)).toEqual([]);
    // The topics the plain member consumed come along too: prune reads them under the version's key
    // (a consumed topic without checkpoints is still checked for unread re-sends; review finding).
    const consumedTopics = async (key: string) =>
      (
        await db.pool.query<{ topic: string }>(
          "SELECT topic FROM replayable.projection_topics WHERE projection = $1",
          [key],
        )
      ).rows;
    expect(await consumedTopics(`${name}@v1`)).toEqual([{ topic }]);
    expect(await consumedTopics(name)).toEqual([]);
    const audit = await db.pool.query<{ action: string; offsets: { convertedFrom: { groupId: string } } }>(
      "SELECT action, offsets FROM replayable.projection_version_audit WHERE projection = $1",
      [name],
    );
    expect(audit.rows).toMatchObject([{ action: "create", offsets: { convertedFrom: { groupId: name } } }]);

    // The plain code is refused from now on: its member would apply records under the plain key
    // and group beside version 1's, and apply them twice.
    const stale = await runCli(["run"], env, { cwd: plainDir });
    expect(stale.code, stale.stderr).toBe(2);
    expect(stale.stderr).toContain(
      `projection ${name} is versioned (blue/green) in this database (version 1 is live), but this code declares it plain`,
    );
    expect(await checkpoints(name)).toEqual([]);

    // Every record's dedupe key came along: after a replay of the whole log from the earliest
    // offsets, version 1's member (as the plain projection's group) applies only the 20 new sales.
    const replay = await cli(["replay", "--projection", name, "--to-earliest", "--execute"]);
    expect(replay.code, replay.stderr).toBe(0);
    await produceRecords(testKafka(), topic, sales(20, 30));
    const member = startCliInTest(["run"], env, { cwd: versionedDir });
    await waitForCaughtUp(admin, name, topic);
    member.signal("SIGTERM");
    expect((await member.exited).code, member.stderr()).toBe(0);
    expect(await totals(`"${name}".totals`)).toEqual(model(50));
  });
});

describe("migrate --convert-to-versioned beside a member that lost its advisory-lock session", () => {
  it("the member applies nothing more under the plain key and stops; version 1 then applies each record once", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const name = uniqueName("convlost");
    const topic = uniqueName("convlost-topic");
    await admin.createTopic(topic, 2);
    await produceRecords(testKafka(), topic, sales(30));
    const plainDir = tempFolder();
    writePlainConfig(plainDir, name, topic);
    const versionedDir = tempFolder();
    writeVersionedConfig(versionedDir, name, topic);
    const env = { DATABASE_URL: db.url };
    const totals = async (table: string) =>
      (
        await db.pool.query<{ shop: string; sales: string; cents: string }>(
          `SELECT shop, sales::text, cents::text FROM ${table} ORDER BY shop`,
        )
      ).rows;
    const plainKeyRows = async () =>
      (
        await db.pool.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM replayable.checkpoints WHERE projection = $1)
                + (SELECT count(*) FROM replayable.processed_events WHERE projection = $1) AS n`,
          [name],
        )
      ).rows[0]!.n;

    // The plain member applies the first 30 sales; once its lock session is lost, it waits 30 s
    // before taking the lock again: the window in which the conversion finds the lock free.
    const plain = startCliInTest(
      ["run"],
      { ...env, REPLAYABLE_FAILPOINTS: "lock-take-again=sleep:30000@1" },
      {
        cwd: plainDir,
      },
    );
    await waitForCaughtUp(admin, name, topic);
    expect(await totals(`"${name}".totals`)).toEqual(model(30));
    const lockSession = await db.pool.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
      [`replayable:${name}:lock`],
    );
    expect(lockSession.rows).toHaveLength(1);
    await db.pool.query("SELECT pg_terminate_backend($1)", [lockSession.rows[0]!.pid]);
    await waitFor("the member to notice the lost lock session", () =>
      plain.stderr().includes("lost the PostgreSQL session holding the projection's shared advisory lock")
        ? true
        : undefined,
    );

    const converted = await runCli(["migrate", "--convert-to-versioned"], env, { cwd: versionedDir });
    expect(converted.code, converted.stderr).toBe(0);
    // The race this test is about: the conversion ran before the member took its lock again.
    expect(plain.stderr()).not.toContain("advisory lock taken again");

    // The member's generation began before the conversion: its next batch must not be applied
    // under the plain key (through the views into version 1's table), and it stops once it holds
    // the lock again and finds the projection converted.
    await produceRecords(testKafka(), topic, sales(20, 30));
    let exitCode: number | null = null;
    void plain.exited.then((exit) => (exitCode = exit.code));
    // The lock is taken again 30 s after the loss, then one rejoin: well within 90 s.
    await waitFor("the plain member to stop", () => (exitCode === null ? undefined : exitCode), 90_000);
    expect(exitCode, plain.stderr()).toBe(2);
    expect(plain.stderr()).toContain(`projection ${name} was converted to versioned`);
    expect(await plainKeyRows()).toBe("0");
    expect(await totals(`"${name}".totals`)).toEqual(model(30));

    // Version 1's member (the plain projection's group) applies the 20 sales the plain one did not,
    // and a replay of the whole log from the earliest offsets changes nothing.
    const runVersion1 = async () => {
      const member = startCliInTest(["run"], env, { cwd: versionedDir });
      await waitForCaughtUp(admin, name, topic);
      member.signal("SIGTERM");
      expect((await member.exited).code, member.stderr()).toBe(0);
    };
    await runVersion1();
    expect(await totals(`"${name}".totals`)).toEqual(model(50));
    const replay = await runCli(["replay", "--projection", name, "--to-earliest", "--execute"], env, {
      cwd: versionedDir,
    });
    expect(replay.code, replay.stderr).toBe(0);
    await runVersion1();
    expect(await totals(`"${name}".totals`)).toEqual(model(50));
    expect(await plainKeyRows()).toBe("0");
  });
});
