/**
 * As a user installs it (issue 12, "Tests"): the package packed with `npm pack`, installed from the
 * tarball into a fresh project outside the repository (no access to its sources or node_modules),
 * a TypeScript `replayable.config.ts` there with a typed projection and its own migration and a
 * zero-code upsert sink deleting rows on tombstones, and every step through the installed bin,
 * `npx replayable`: `migrate`, `run` with two members, `status`, `replay --to-earliest --execute`
 * then `run` again (tables unchanged, duplicates counted), `rebuild --execute` (tables equal),
 * `dead-letters list`; against the real Kafka and PostgreSQL.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords, type ProducerRecord } from "../../../src/kafka/producer.js";
import {
  runCli,
  scrapeMetric,
  startCliInTest,
  type CliOptions,
  type CliProcess,
} from "../../helpers/process.js";
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

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const run = promisify(execFile);

/**
 * This process's environment as a user's shell would have it: without what npm, vitest and tsx
 * set for the repository (npm_* but the cache and registry, NODE_OPTIONS, NODE_PATH, NODE_ENV),
 * without the settings `make test` exports for the repository's own tests (DATABASE_URL,
 * KAFKA_*, REPLAYABLE_*: they would override the user's config file, as environment variables
 * do), and with no PATH entry in the repository or in any node_modules but the folder of the
 * Node.js running the tests, first: the user runs a supported Node.js (`make test` puts one from
 * `.cache/node/` first; without it, `env node` in the bin's first line found the machine's
 * Node.js 20, which the CLI now warns of).
 */
function userEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (/^npm_/i.test(name) && !/^npm_config_(cache|registry|userconfig)$/i.test(name)) continue;
    if (/^(NODE_OPTIONS|NODE_PATH|NODE_ENV|INIT_CWD|VITEST.*|TSX.*)$/i.test(name)) continue;
    if (/^(DATABASE_URL(_FILE)?|KAFKA_.*|REPLAYABLE_.*)$/.test(name)) continue;
    env[name] = value;
  }
  env.PATH = [
    dirname(process.execPath),
    ...(process.env.PATH ?? "")
      .split(delimiter)
      .filter((dir) => dir !== "" && !resolve(dir).startsWith(REPO) && !dir.includes("node_modules")),
  ].join(delimiter);
  return env;
}

const USER_ENV = userEnvironment();

/** Runs `program args` in `cwd` with the user's environment; throws with its output if it fails. */
async function sh(program: string, args: readonly string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(program, args, { cwd, env: USER_ENV, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${program} ${args.join(" ")} failed in ${cwd}: ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`,
    );
  }
}

/** What `npm pack --json` prints for one package. */
interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
  bundled: string[];
}

const SALES = uniqueName("sales");
const SALES_TOPIC = uniqueName("sales-topic");
const CUSTOMERS = uniqueName("customers");
const CUSTOMERS_TOPIC = uniqueName("customers-topic");

const SALES_MIGRATION = `CREATE SCHEMA IF NOT EXISTS "sales";
--> statement-breakpoint
CREATE TABLE "sales"."shop_totals" ("shop" text PRIMARY KEY NOT NULL, "sales" bigint NOT NULL, "cents" bigint NOT NULL);
`;

/** The user's config: a typed projection with its migration, and a zero-code upsert sink. */
function configFile(databaseUrl: string): string {
  return `import { defineConfig, defineProjection, PermanentRecordError } from "replayable";

interface Sale {
  id: string;
  shop: string;
  cents: number;
}

const sales = defineProjection<Sale>({
  name: ${JSON.stringify(SALES)},
  dedupe: { kind: "event-id", field: "id" },
  topics: [${JSON.stringify(SALES_TOPIC)}],
  tables: ["sales.shop_totals"],
  migrations: "./migrations/sales",
  decode(record) {
    const sale = JSON.parse(record.value?.toString("utf8") ?? "null") as Partial<Sale> | null;
    if (typeof sale?.shop !== "string" || !Number.isSafeInteger(sale.cents))
      throw new PermanentRecordError("DECODE_FAILED", "a sale needs a shop and whole cents");
    return sale as Sale;
  },
  async apply({ client }, { value }) {
    await client.query(
      \`INSERT INTO sales.shop_totals (shop, sales, cents) VALUES ($1, 1, $2)
       ON CONFLICT (shop) DO UPDATE SET sales = shop_totals.sales + 1, cents = shop_totals.cents + excluded.cents\`,
      [value.shop, value.cents],
    );
  },
});

export default defineConfig({
  kafkaBrokers: ${JSON.stringify(BROKERS)},
  databaseUrl: ${JSON.stringify(databaseUrl)},
  projections: [
    sales,
    {
      kind: "upsert",
      name: ${JSON.stringify(CUSTOMERS)},
      topics: [${JSON.stringify(CUSTOMERS_TOPIC)}],
      table: "crm.customers",
      mode: "upsert",
      key: { from: "record-key", column: "id", type: "bigint" },
      columns: { email: { type: "text", required: true }, visits: { type: "integer" } },
      deleteOnTombstone: true,
    },
  ],
});
`;
}

/**
 * What a user's type-checker must see in the installed declarations: the apply context's pg client
 * is typed (an unresolved "pg" would make it `any`, and the directive below unused: TS2578).
 */
const TYPES_CHECK = `import type { ApplyContext } from "replayable";

export async function shopOf({ client }: ApplyContext): Promise<string> {
  const { rows } = await client.query<{ shop: string }>("SELECT 'shop-1' AS shop");
  // @ts-expect-error: the row is typed, its shop is a string
  const wrong: number = rows[0]!.shop;
  void wrong;
  return rows[0]!.shop;
}
`;

/** Writes the user's project files: the config, the typed projection's migration, a tsconfig. */
function writeProject(dir: string, databaseUrl: string): void {
  writeOneMigration(join(dir, "migrations", "sales"), "sales", SALES_MIGRATION);
  writeFileSync(join(dir, "replayable.config.ts"), configFile(databaseUrl));
  writeFileSync(join(dir, "typesCheck.ts"), TYPES_CHECK);
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: ["node"],
      },
      include: ["replayable.config.ts", "typesCheck.ts", "starter/*.ts"],
    }),
  );
}

let project: string;
let packed: PackResult;
let db: TestDatabase;
let admin: ClusterAdmin;

beforeAll(async () => {
  admin = await testAdmin();
  db = await createTestDatabase(false);
  // An empty database: `migrate` creates replayable's schema. The upsert sink's table is the
  // user's own DDL (docs/upsert-sink.md).
  await db.pool.query(
    `DROP SCHEMA replayable CASCADE;
     CREATE SCHEMA crm;
     CREATE TABLE crm.customers (id bigint PRIMARY KEY, email text NOT NULL, visits integer)`,
  );
  await admin.createTopic(SALES_TOPIC, 2);
  await admin.createTopic(CUSTOMERS_TOPIC, 2);

  // As the README's "Your own topic" says: `npm pack` in the repository (its `prepack` builds),
  // the tarball into a fresh project outside the repository, `npm install ./replayable-0.1.0.tgz`
  // (from the npm cache where it can).
  project = mkdtempSync(join(tmpdir(), "replayable-user-"));
  const out = await sh("npm", ["pack", "--json", "--pack-destination", project], REPO);
  [packed] = JSON.parse(out.slice(out.indexOf("["))) as [PackResult];
  const dev = (
    JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
      devDependencies: Record<string, string>;
    }
  ).devDependencies;
  await sh("npm", ["init", "-y"], project);
  await sh(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      `./${packed.filename}`,
      `typescript@${dev.typescript}`,
      `@types/node@${dev["@types/node"]}`,
    ],
    project,
  );
  writeProject(project, db.url);
}, 300_000);

afterAll(async () => {
  await admin?.close();
  await db?.drop();
  if (project !== undefined) rmSync(project, { recursive: true, force: true });
});

/** The CLI as the user's project has it: the installed bin through npx, in the user's environment. */
const installed: CliOptions = {
  get cwd() {
    return project;
  },
  command: ["npx", "replayable"],
  baseEnv: USER_ENV,
  processGroup: true,
};

/** `npx replayable <args>` in the user's project, to completion. */
function npx(args: readonly string[]) {
  return runCli(args, {}, installed);
}

/** Starts `npx replayable run --projection <name>`: one member of the projection's group. */
function member(projection: string): CliProcess {
  return startCliInTest(["run", "--projection", projection], {}, installed);
}

/** Stops members as Ctrl-C in their terminals does; each stops gracefully and leaves the group. */
async function stop(group: string, ...members: CliProcess[]): Promise<void> {
  for (const m of members) m.signal("SIGINT");
  for (const m of members) {
    await m.exited;
    expect(m.stderr()).toContain('"msg":"consumer stopped"');
    expect(m.stderr()).not.toMatch(/"level":(50|60)|^replayable: /m);
  }
  await waitFor("the group to have no members", async () =>
    (await admin.describeGroup(group)).members.length === 0 ? true : undefined,
  );
}

interface Checksums {
  tables: { table: string; rows: string; md5: string }[];
}

/** `npx replayable checksum`: rows and MD5 of the projection's tables. */
async function checksum(projection: string): Promise<Checksums["tables"]> {
  const r = await npx(["checksum", "--projection", projection, "--output", "json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as Checksums).tables;
}

/**
 * The flow every projection goes through, with the projection's own group (its name): two members
 * started before `records` are produced, run until caught up (each applies some), `status` (lag 0);
 * replay from the earliest offsets and run (every record a duplicate, nothing applied, checksums
 * unchanged); rebuild and run (checksums equal). `tables()` reads the tables; after the rebuild it
 * must be `empty`. Returns the tables after the first run.
 */
async function flow(
  projection: string,
  topic: string,
  records: readonly ProducerRecord[],
  tables: () => Promise<unknown>,
  empty: unknown,
): Promise<unknown> {
  const a = member(projection);
  const b = member(projection);
  await waitFor("two members in the group", async () => {
    const g = await admin.describeGroup(projection);
    return g.state === "Stable" && g.members.length === 2 ? true : undefined;
  });
  await produceRecords(testKafka(), topic, records);
  await waitForCaughtUp(admin, projection, topic);
  const [portA, portB] = await Promise.all([a.metricsPort(), b.metricsPort()]);
  const applied = async (port: number) =>
    (await scrapeMetric(port, "replayable_records_applied_total")) +
    (await scrapeMetric(port, "replayable_records_dead_lettered_total"));
  expect(await applied(portA), "the first member's records").toBeGreaterThan(0);
  expect(await applied(portB), "the second member's records").toBeGreaterThan(0);
  await stop(projection, a, b);
  const first = await tables();

  const status = await npx(["status", "--group", projection, "--output", "json"]);
  expect(status.code, status.stderr).toBe(0);
  const parsed = JSON.parse(status.stdout) as { projection: string; partitions: { lag: string }[] };
  expect(parsed.projection).toBe(projection);
  expect(parsed.partitions.map((p) => p.lag)).toEqual(["0", "0"]);
  const before = await checksum(projection);

  const replay = await npx(["replay", "--group", projection, "--all-topics", "--to-earliest", "--execute"]);
  expect(replay.code, replay.stderr).toBe(0);
  let again = member(projection);
  const port = await again.metricsPort();
  await waitForCaughtUp(admin, projection, topic);
  await waitFor("every re-read record to count as a duplicate", async () =>
    (await scrapeMetric(port, "replayable_duplicates_total", { key: "offset" })) === records.length
      ? true
      : undefined,
  );
  expect(await scrapeMetric(port, "replayable_records_applied_total")).toBe(0);
  await stop(projection, again);
  expect(await tables()).toEqual(first);
  expect(await checksum(projection)).toEqual(before);

  const rebuilt = await npx(["rebuild", "--projection", projection, "--group", projection, "--execute"]);
  expect(rebuilt.code, rebuilt.stderr).toBe(0);
  expect(await tables()).toEqual(empty);
  again = member(projection);
  await waitForCaughtUp(admin, projection, topic);
  await stop(projection, again);
  expect(await tables()).toEqual(first);
  expect(await checksum(projection)).toEqual(before);
  return first;
}

/** `npx replayable dead-letters list` of one projection: [code, message] of each. */
async function deadLetters(projection: string): Promise<[string, string][]> {
  const r = await npx(["dead-letters", "list", "--projection", projection, "--output", "json"]);
  expect(r.code, r.stderr).toBe(0);
  const list = JSON.parse(r.stdout) as { projection: string; error: { code: string; message: string } }[];
  expect(list.every((l) => l.projection === projection)).toBe(true);
  return list.map((l) => [l.error.code, l.error.message]);
}

describe("replayable as a user installs it: npm pack, npm install <tarball>, npx replayable", () => {
  it("packs the compiled CLI, the migrations and the patched Kafka clients, and installs without tsx or sources", async () => {
    const files = packed.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining([
        "bin/replayable.js",
        "bin/resolveHooks.js",
        "bin/nodeVersion.js",
        "dist/src/cli/main.js",
        "dist/src/index.js",
        "dist/src/index.d.ts",
        "drizzle/engine/meta/_journal.json",
        "node_modules/kafkajs/src/consumer/filterAbortedMessages.js",
        "node_modules/@platformatic/kafka/dist/network/connection-pool.js",
      ]),
    );
    expect(files.filter((f) => /^(src|test|patches)\//.test(f))).toEqual([]);
    // The two clients as patched here, @platformatic/kafka with the dependencies it needs.
    expect(packed.bundled).toEqual(expect.arrayContaining(["kafkajs", "@platformatic/kafka"]));
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies.replayable).toBe(`file:${packed.filename}`);

    const root = join(project, "node_modules", "replayable");
    expect(existsSync(join(root, "node_modules", "kafkajs", "package.json"))).toBe(true);
    const pool = join(
      root,
      "node_modules",
      "@platformatic",
      "kafka",
      "dist",
      "network",
      "connection-pool.js",
    );
    expect(readFileSync(pool, "utf8")).toContain("brokersByHealth");
    // What `run` with KAFKA_CLIENT=platformatic checks at start-up, on the installed package: the
    // copy it resolves is the bundled, patched one.
    const loader = join(root, "dist", "src", "kafka", "platformatic", "loadClient.js");
    const patched = await sh(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const m = await import(${JSON.stringify(loader)}); m.assertPlatformaticPatched(await m.loadPlatformaticKafka()); console.log("patched");`,
      ],
      project,
    );
    expect(patched.trim()).toBe("patched");
    // A service of the user's own starts with the CLI's resolve hook (README "Projections").
    const hooked = await sh(
      process.execPath,
      [
        "--import",
        "replayable/resolve-hooks",
        "--input-type=module",
        "-e",
        // The README's snippet: the group defaults to the projection named to loadConfig.
        `const m = await import("replayable"); console.log(typeof m.ConsumerService, m.loadConfig({}, { REPLAYABLE_PROJECTION: "counter" }).groupId);`,
      ],
      project,
    );
    expect(hooked.trim()).toBe("function counter");
    expect(existsSync(join(root, "src"))).toBe(false);
    expect(existsSync(join(project, "node_modules", "tsx"))).toBe(false);
    // Source maps point at src/, which is not shipped: each carries its sources' text instead, so
    // a stack trace or a debugger shows the TypeScript (issue 28).
    const maps = files.filter((f) => f.startsWith("dist/") && f.endsWith(".map"));
    expect(maps.length).toBeGreaterThan(0);
    for (const map of maps) {
      const parsed = JSON.parse(readFileSync(join(root, map), "utf8")) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      expect(parsed.sourcesContent?.length, map).toBe(parsed.sources.length);
      expect(
        parsed.sourcesContent?.every((text) => typeof text === "string" && text.length > 0),
        map,
      ).toBe(true);
    }
    const version = await npx(["--version"]);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe("0.1.0");
  });

  it("type-checks the user's TypeScript config, and the one `init` writes, against the installed declarations", async () => {
    const starter = join(project, "starter");
    mkdirSync(starter);
    const init = await runCli(["init"], {}, { ...installed, cwd: starter });
    expect(init.code, init.stderr).toBe(0);
    expect(existsSync(join(starter, "migrations", "orders", "meta", "_journal.json"))).toBe(true);
    // tsc exits non-zero (and sh throws with its output) on any type error.
    await sh("npx", ["tsc", "-p", "."], project);
  });

  it("a typed projection with its own migration: migrate, two members, status, replay, rebuild, dead letters", async () => {
    const migrated = await npx(["migrate"]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toContain(`migrations applied: replayable, ${SALES}, ${CUSTOMERS}`);
    const schemas = await db.pool.query<{ name: string }>(
      "SELECT nspname AS name FROM pg_namespace WHERE nspname IN ('crm', 'replayable', 'sales', 'ledger', 'github') ORDER BY 1",
    );
    expect(schemas.rows.map((r) => r.name)).toEqual(["crm", "replayable", "sales"]);

    const sales = Array.from({ length: 40 }, (_, i) => ({
      key: `shop-${i % 5}`,
      value: JSON.stringify({ id: `sale-${i}`, shop: `shop-${i % 5}`, cents: 100 + i }),
      partition: i % 2,
    }));
    // 4 re-sent sales (same id, a new record) and one sale decode refuses: 45 records.
    const records = [
      ...sales,
      ...sales.slice(0, 4),
      { key: "shop-0", value: JSON.stringify({ id: "sale-bad", cents: 5 }), partition: 1 },
    ];
    const totals = async () =>
      (
        await db.pool.query<{ shops: string; sales: string; cents: string }>(
          "SELECT count(*)::text AS shops, coalesce(sum(sales), 0)::text AS sales, coalesce(sum(cents), 0)::text AS cents FROM sales.shop_totals",
        )
      ).rows[0]!;
    const first = await flow(SALES, SALES_TOPIC, records, totals, { shops: "0", sales: "0", cents: "0" });
    const cents = sales.reduce((sum, _s, i) => sum + 100 + i, 0);
    expect(first).toEqual({ shops: "5", sales: "40", cents: String(cents) });
    expect(await deadLetters(SALES)).toEqual([["DECODE_FAILED", "a sale needs a shop and whole cents"]]);
  });

  it("a zero-code upsert sink with tombstones: migrate, two members, status, replay, rebuild, dead letters", async () => {
    const migrated = await npx(["migrate", "--projection", CUSTOMERS]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toContain(`migrations applied: replayable, ${CUSTOMERS}`);

    const json = (email: string, visits: number | string) => JSON.stringify({ email, visits });
    const records: ProducerRecord[] = [
      { key: "1", value: json("a@x", 1), partition: 0 },
      { key: "2", value: json("b@x", 1), partition: 1 },
      { key: "1", value: json("a2@x", 2), partition: 0 },
      { key: "3", value: json("c@x", 1), partition: 0 },
      { key: "3", value: null, partition: 0 }, // tombstone: deletes 3
      { key: "2", value: json("b@x", "many"), partition: 1 }, // not an integer: dead letter
      { key: "4", value: json("d@x", 7), partition: 1 },
      { key: "5", value: json("e@x", 1), partition: 1 },
      { key: "5", value: null, partition: 1 }, // tombstone: deletes 5
      { key: "6", value: json("f@x", 3), partition: 0 },
    ];
    const rows = async () =>
      (
        await db.pool.query<{ row: string }>(
          "SELECT id || ':' || email || ':' || coalesce(visits::text, '-') AS row FROM crm.customers ORDER BY id",
        )
      ).rows.map((r) => r.row);
    const first = await flow(CUSTOMERS, CUSTOMERS_TOPIC, records, rows, []);
    expect(first).toEqual(["1:a2@x:2", "2:b@x:1", "4:d@x:7", "6:f@x:3"]);
    const letters = await deadLetters(CUSTOMERS);
    expect(letters.map(([code]) => code)).toEqual(["DECODE_FAILED"]);
    expect(letters[0]![1]).toContain('field "visits"');
  });
});
