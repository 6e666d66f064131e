/**
 * A projection of one's own, from a config file in a folder outside the repository: `migrate`,
 * `run`, `status`, `replay --to-earliest --execute` then `run` again (tables unchanged, duplicates
 * counted), `rebuild --execute`, `dead-letters list`, all through the CLI in a subprocess against
 * the real Kafka and PostgreSQL. Also: a bad config file fails with every problem at once (exit 2),
 * and `init` writes a file that works and refuses to overwrite it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, scrapeMetric, startCliInTest } from "../../helpers/process.js";
import {
  BROKERS,
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
  type TestDatabase,
} from "../../helpers/stack.js";
import { writeOneMigration } from "../../helpers/migrationFolder.js";

let admin: ClusterAdmin;

beforeAll(async () => {
  admin = await testAdmin();
});

afterAll(async () => {
  await admin?.close();
});

/** A folder of its own outside the repository, removed when the test finishes. */
function tempFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "replayable-config-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A database of its own with no schema at all (not even replayable's). */
async function emptyDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase(false);
  await db.pool.query("DROP SCHEMA replayable CASCADE");
  onTestFinished(() => db.drop());
  return db;
}

async function schemas(db: TestDatabase): Promise<string[]> {
  const r = await db.pool.query<{ name: string }>(
    "SELECT nspname AS name FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname NOT IN ('information_schema', 'public') ORDER BY 1",
  );
  return r.rows.map((row) => row.name);
}

const SALES_MIGRATION = `CREATE SCHEMA IF NOT EXISTS "sales";
--> statement-breakpoint
CREATE TABLE "sales"."shop_totals" ("shop" text PRIMARY KEY NOT NULL, "sales" bigint NOT NULL, "cents" bigint NOT NULL);
`;

/** Writes a config with one typed projection `name` of `topic` and its migration into `dir`. */
function writeSalesConfig(dir: string, name: string, topic: string): void {
  writeOneMigration(join(dir, "migrations", "sales"), "sales", SALES_MIGRATION);
  writeFileSync(
    join(dir, "replayable.config.ts"),
    `import { defineConfig, defineProjection, PermanentRecordError } from "replayable";

interface Sale { id: string; shop: string; cents: number }

const sales = defineProjection<Sale>({
  name: ${JSON.stringify(name)},
  dedupe: { kind: "event-id", field: "id" },
  topics: [${JSON.stringify(topic)}],
  tables: ["sales.shop_totals"],
  migrations: "./migrations/sales",
  decode(record) {
    try {
      return JSON.parse(record.value?.toString("utf8") ?? "") as Sale;
    } catch {
      throw new PermanentRecordError("DECODE_FAILED", "not JSON");
    }
  },
  async apply({ client }, { value }) {
    await client.query(
      "INSERT INTO sales.shop_totals (shop, sales, cents) VALUES ($1, 1, $2) ON CONFLICT (shop) DO UPDATE SET sales = shop_totals.sales + 1, cents = shop_totals.cents + excluded.cents",
      [value.shop, value.cents],
    );
  },
});

export default defineConfig({
  kafkaBrokers: ${JSON.stringify(BROKERS)},
  // The environment's DATABASE_URL overrides this (file < environment < flags).
  databaseUrl: "postgres://nobody@127.0.0.1:1/not_used",
  lagRefreshMs: 500,
  projections: [sales],
});
`,
  );
}

interface Checksums {
  tables: { table: string; rows: string; md5: string }[];
}

describe("a projection of one's own from replayable.config.ts", () => {
  it("migrates, runs, replays (tables unchanged, duplicates counted), rebuilds and lists its dead letters", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    const name = uniqueName("sales");
    const topic = uniqueName("sales-topic");
    writeSalesConfig(dir, name, topic);
    const env = { DATABASE_URL: db.url };
    const cli = (args: string[]) => runCli(args, env, { cwd: dir });

    await admin.createTopic(topic, 2);
    const sales = Array.from({ length: 40 }, (_, i) => ({
      key: `shop-${i % 5}`,
      value: JSON.stringify({ id: `sale-${i}`, shop: `shop-${i % 5}`, cents: 100 + i }),
    }));
    // 4 re-sent sales (same id, a new record) and one record that is not JSON: 45 records.
    const records = [...sales, ...sales.slice(0, 4), { key: "shop-0", value: "not json" }];
    await produceRecords(testKafka(), topic, records);
    const expectedCents = sales.reduce((sum, _s, i) => sum + 100 + i, 0);

    const migrated = await cli(["migrate"]);
    expect(migrated.stderr).toBe("");
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toContain(`migrations applied: replayable, ${name}`);
    expect(await schemas(db)).toEqual(["replayable", "sales"]);

    const totals = async () =>
      (
        await db.pool.query<{ sales: string; cents: string }>(
          "SELECT coalesce(sum(sales), 0)::text AS sales, coalesce(sum(cents), 0)::text AS cents FROM sales.shop_totals",
        )
      ).rows[0]!;
    const checksum = async () => {
      const r = await cli(["checksum", "--output", "json"]);
      expect(r.code).toBe(0);
      return (JSON.parse(r.stdout) as Checksums).tables;
    };
    const stopped = async (run: ReturnType<typeof startCliInTest>) => {
      run.child.kill("SIGTERM");
      expect((await run.exited).code).toBe(0);
      await waitFor("the group to have no members", async () => {
        const g = await admin.describeGroup(name);
        return g.members.length === 0 ? true : undefined;
      });
    };

    let run = startCliInTest(["run"], env, { cwd: dir });
    await waitForCaughtUp(admin, name, topic);
    await stopped(run);
    expect(await totals()).toEqual({ sales: "40", cents: String(expectedCents) });
    const status = await cli(["status", "--output", "json"]);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { projection: string; partitions: { lag: string }[] };
    expect(parsed.projection).toBe(name);
    expect(parsed.partitions.map((p) => p.lag)).toEqual(["0", "0"]);
    const before = await checksum();
    expect(before).toEqual([{ table: "sales.shop_totals", rows: "5", md5: expect.any(String) as string }]);

    const replay = await cli(["replay", "--group", name, "--all-topics", "--to-earliest", "--execute"]);
    expect(replay.code).toBe(0);
    run = startCliInTest(["run"], env, { cwd: dir });
    const port = await run.metricsPort();
    await waitForCaughtUp(admin, name, topic);
    await waitFor("every re-read record to count as a duplicate", async () =>
      (await scrapeMetric(port, "replayable_duplicates_total", { key: "offset" })) === records.length
        ? true
        : undefined,
    );
    expect(await scrapeMetric(port, "replayable_records_applied_total")).toBe(0);
    await stopped(run);
    expect(await checksum()).toEqual(before);

    const rebuilt = await cli(["rebuild", "--projection", name, "--group", name, "--execute"]);
    expect(rebuilt.stderr).toBe("");
    expect(rebuilt.code).toBe(0);
    expect(await totals()).toEqual({ sales: "0", cents: "0" });
    run = startCliInTest(["run"], env, { cwd: dir });
    await waitForCaughtUp(admin, name, topic);
    await stopped(run);
    expect(await checksum()).toEqual(before);

    const letters = await cli(["dead-letters", "list", "--output", "json"]);
    expect(letters.code).toBe(0);
    const list = JSON.parse(letters.stdout) as { projection: string; error: { code: string } }[];
    // The event id is read from the value before decode: a value that is not JSON fails to decode.
    expect(list.map((l) => [l.projection, l.error.code])).toEqual([[name, "DECODE_FAILED"]]);
  }, 240_000);
});

describe("migrate creates the example schemas only when they are named", () => {
  it("creates only replayable's schema without a config file, and ledger's with --projection ledger", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    const plain = await runCli(["migrate"], { DATABASE_URL: db.url }, { cwd: dir });
    expect(plain.code).toBe(0);
    expect(await schemas(db)).toEqual(["replayable"]);
    const ledger = await runCli(
      ["migrate", "--projection", "ledger"],
      { DATABASE_URL: db.url },
      { cwd: dir },
    );
    expect(ledger.code).toBe(0);
    expect(await schemas(db)).toEqual(["ledger", "replayable"]);
  }, 60_000);
});

describe("a config file with errors", () => {
  it("fails at start-up with every problem listed and exit 2", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    writeFileSync(
      join(dir, "replayable.config.ts"),
      `import { defineConfig } from "replayable";
const base = { dedupe: { kind: "offset" }, topics: ["t"], decode: (r: unknown) => r, apply: async () => {} } as const;
export default defineConfig({
  dbPoolSise: 3,
  projections: [
    { ...base, name: "typo", tables: ["typo.t"], tabels: ["typo.t"] } as never,
    { ...base, name: "twice", tables: ["twice.t"] },
    { ...base, name: "twice", tables: ["twice.t"] },
    { ...base, name: "unmigrated", tables: ["nowhere.missing_table"] },
  ],
});
`,
    );
    const result = await runCli(["migrate"], { DATABASE_URL: db.url }, { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("replayable: invalid configuration:");
    expect(result.stderr).toContain(
      "replayable.config.ts: dbPoolSise: is not a setting; did you mean dbPoolSize?",
    );
    expect(result.stderr).toContain("projections[0] (typo): tabels: unknown field; did you mean tables?");
    expect(result.stderr).toContain('projections[2] (twice): name "twice" is already used by projections[1]');
    expect(result.stderr).toContain(
      "projection unmigrated: table nowhere.missing_table does not exist in the database",
    );
    expect(result.stderr).toContain("projection twice: table twice.t does not exist in the database");
    // Nothing was migrated.
    expect(await schemas(db)).toEqual([]);
  }, 60_000);
});

describe("a command naming one projection of several", () => {
  it("regression: checks only that projection's tables, not another's that is missing (`--projection a` was refused for b's missing table)", async () => {
    const dir = tempFolder();
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    await db.pool.query("CREATE SCHEMA a; CREATE TABLE a.rows (id text PRIMARY KEY)");
    writeFileSync(
      join(dir, "replayable.config.ts"),
      `import { defineConfig } from "replayable";
const base = { dedupe: { kind: "offset" }, topics: ["t"], decode: (r: unknown) => r, apply: async () => {} } as const;
export default defineConfig({
  projections: [
    { ...base, name: "a", tables: ["a.rows"] },
    { ...base, name: "b", tables: ["b.rows"] },
  ],
});
`,
    );
    const a = await runCli(["checksum", "--projection", "a"], { DATABASE_URL: db.url }, { cwd: dir });
    expect(a.stderr).not.toContain("b.rows");
    expect(a.code).toBe(0);
    expect(a.stdout).toContain("a.rows");
    const b = await runCli(["checksum", "--projection", "b"], { DATABASE_URL: db.url }, { cwd: dir });
    expect(b.code).toBe(2);
    expect(b.stderr).toContain("projection b: table b.rows does not exist in the database");
    expect(b.stderr).not.toContain("a.rows");
  }, 60_000);
});

describe("a config file naming a projection", () => {
  it("regression: migrate refuses a `projection` setting that names no projection, as every other command does, and migrates a known one (it ignored the setting: exit 0; break-it review)", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    const config = (projection: string) =>
      writeFileSync(
        join(dir, "replayable.config.ts"),
        `import { defineConfig } from "replayable";
export default defineConfig({ projection: ${JSON.stringify(projection)} });
`,
      );
    config("nope");
    const refused = await runCli(["migrate"], { DATABASE_URL: db.url }, { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "REPLAYABLE_PROJECTION=nope (from replayable.config.ts: projection): unknown projection",
    );
    expect(await schemas(db)).toEqual([]);
    config("ledger");
    const migrated = await runCli(["migrate"], { DATABASE_URL: db.url }, { cwd: dir });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(await schemas(db)).toEqual(["ledger", "replayable"]);
  }, 60_000);
});

describe("replayable init", () => {
  it("writes a config that migrates and runs, and refuses to overwrite it", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    const init = await runCli(["init"], {}, { cwd: dir });
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("wrote replayable.config.ts");
    const written = readFileSync(join(dir, "replayable.config.ts"), "utf8");

    const again = await runCli(["init"], {}, { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("replayable.config.ts");
    expect(again.stderr).toContain("nothing was written");
    expect(readFileSync(join(dir, "replayable.config.ts"), "utf8")).toBe(written);

    const env = { DATABASE_URL: db.url, KAFKA_BROKERS: BROKERS.join(",") };
    const migrated = await runCli(["migrate"], env, { cwd: dir });
    expect(migrated.code).toBe(0);
    expect(await schemas(db)).toEqual(["orders", "replayable"]);

    const topic = uniqueName("orders-topic");
    const group = uniqueName("orders-group");
    await admin.createTopic(topic, 1);
    await produceRecords(testKafka(), topic, [
      { key: "o-1", value: JSON.stringify({ id: "o-1", customer: "c-1", amountCents: 1250 }) },
      { key: "o-2", value: JSON.stringify({ id: "o-2", customer: "c-1", amountCents: 750 }) },
      { key: "o-1", value: JSON.stringify({ id: "o-1", customer: "c-1", amountCents: 1250 }) },
    ]);
    startCliInTest(["run", "--topic", topic, "--group", group], env, { cwd: dir });
    await waitForCaughtUp(admin, group, topic);
    const r = await db.pool.query(
      "SELECT customer, orders::text, amount_cents::text FROM orders.customer_totals",
    );
    expect(r.rows).toEqual([{ customer: "c-1", orders: "2", amount_cents: "2000" }]);
  }, 120_000);
});
