/**
 * A newcomer's folder (issue 28): a config file with one projection is enough for every operator
 * command (its name is the default group, its `topics` the default topics, and each command says
 * which it used); a database never migrated gets "run `replayable migrate` first" from every
 * command and from `run` before it joins the group; an empty flag is an error naming it. All
 * through the CLI in a subprocess against the real Kafka and PostgreSQL.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli } from "../../helpers/process.js";
import { writeOneMigration } from "../../helpers/migrationFolder.js";
import {
  BROKERS,
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitFor,
  type TestDatabase,
} from "../../helpers/stack.js";

let admin: ClusterAdmin;

beforeAll(async () => {
  admin = await testAdmin();
});

afterAll(async () => {
  await admin?.close();
});

/** A folder of its own outside the repository, removed when the test finishes. */
function tempFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "replayable-defaults-"));
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

/** Writes a config file with one projection `name` of `topic` (event ids in field "id") and its migration. */
function writeConfig(dir: string, name: string, topic: string): void {
  writeOneMigration(
    join(dir, "migrations", "tally"),
    "tally",
    `CREATE SCHEMA IF NOT EXISTS "tally";
--> statement-breakpoint
CREATE TABLE "tally"."counts" ("k" text PRIMARY KEY NOT NULL, "n" bigint NOT NULL);
`,
  );
  writeFileSync(
    join(dir, "replayable.config.ts"),
    `import { defineConfig, defineProjection } from "replayable";

export default defineConfig({
  projections: [
    defineProjection<{ id: string; k: string }>({
      name: ${JSON.stringify(name)},
      dedupe: { kind: "event-id", field: "id" },
      topics: [${JSON.stringify(topic)}],
      tables: ["tally.counts"],
      migrations: "./migrations/tally",
      decode: (record) => JSON.parse(record.value!.toString()) as { id: string; k: string },
      async apply({ client }, { value }) {
        await client.query(
          "INSERT INTO tally.counts (k, n) VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET n = counts.n + 1",
          [value.k],
        );
      },
    }),
  ],
});
`,
  );
}

describe("a folder whose config file has one projection", () => {
  it("regression: replay --to-earliest, rebuild, prune, status, checksum and dead-letters need no --projection, --group or --topic, and say what they used", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    const name = uniqueName("tally");
    const topic = uniqueName("tally-topic");
    writeConfig(dir, name, topic);
    const env = { DATABASE_URL: db.url, KAFKA_BROKERS: BROKERS.join(",") };
    const cli = (...args: string[]) => runCli(args, env, { cwd: dir });
    await admin.createTopic(topic, 2);
    await produceRecords(
      testKafka(),
      topic,
      Array.from({ length: 6 }, (_, i) => ({
        key: `k${i % 2}`,
        value: JSON.stringify({ id: `e${i}`, k: `k${i % 2}` }),
      })),
    );
    expect((await cli("migrate")).code).toBe(0);
    // A fresh broker answers NOT_COORDINATOR until its offsets topic is ready: wait for that first.
    await waitFor("the group coordinator", async () => {
      await admin.committedOffsets(name, [topic]);
      return true;
    });
    const usedAll = `replayable: using projection ${name}, group ${name}, topics ${topic} (from replayable.config.ts: the projection, the projection's name as group, the projection's topics); name others with --projection, --group, --topic\n`;
    const usedGroup = `replayable: using projection ${name}, group ${name} (from replayable.config.ts: the projection, the projection's name as group); name others with --projection, --group\n`;

    // Was: "error: required option '--group <id>' not specified".
    const dryRun = await cli("replay", "--to-earliest");
    expect(dryRun.stderr).toBe(usedAll);
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toContain(`--to-earliest for group ${name}`);
    expect(dryRun.stdout).toMatch(new RegExp(`^${topic}\\s+0\\s`, "m"));
    expect(dryRun.stdout).toMatch(new RegExp(`^${topic}\\s+1\\s`, "m"));

    const executed = await cli("replay", "--to-earliest", "--execute");
    expect(executed.code).toBe(0);
    expect((await admin.committedOffsets(name, [topic])).map((c) => c.offset)).toEqual(["0", "0"]);

    // Named by the operator: nothing to say.
    const named = await cli(
      "replay",
      "--group",
      name,
      "--topic",
      topic,
      "--projection",
      name,
      "--to-earliest",
    );
    expect(named.code).toBe(0);
    expect(named.stderr).toBe("");

    // Was: "error: required option '--projection <name>' not specified".
    const rebuild = await cli("rebuild");
    expect(rebuild.stderr).toBe(usedGroup);
    expect(rebuild.code).toBe(0);
    expect(rebuild.stdout).toContain(`rebuild of projection ${name} with group ${name}`);

    const prune = await cli("prune");
    expect(prune.stderr).toBe(usedGroup);
    expect(prune.code).toBe(0);
    expect(prune.stdout).toContain(`event ids of projection ${name}`);

    const status = await cli("status");
    expect(status.stderr).toBe(usedGroup);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`group ${name}, projection ${name}`);

    const usedProjection = `replayable: using projection ${name} (from replayable.config.ts: the projection); name others with --projection\n`;
    for (const args of [["checksum"], ["dead-letters", "list"]]) {
      const r = await cli(...args);
      expect(r.stderr, args.join(" ")).toBe(usedProjection);
      expect(r.code, args.join(" ")).toBe(0);
    }
  }, 300_000);
});

describe("a database that was never migrated", () => {
  it("regression: status, replay, dead-letters and run --no-migrate say to run `replayable migrate` first (exit 2); run before it joins the group", async () => {
    const dir = tempFolder();
    const db = await emptyDatabase();
    const name = uniqueName("tally");
    const topic = uniqueName("tally-topic");
    writeConfig(dir, name, topic);
    await admin.createTopic(topic, 1);
    const env = { DATABASE_URL: db.url, KAFKA_BROKERS: BROKERS.join(","), LOG_LEVEL: "error" };
    // Each checks replayable's tables with its first connection; `run` before it joins the group.
    const commands = [
      ["status"],
      ["replay", "--to-earliest"],
      ["dead-letters", "list"],
      ["run", "--no-migrate"],
    ];
    for (const args of commands) {
      const r = await runCli(args, env, { cwd: dir });
      const what = `${args.join(" ")}: ${r.stderr}`;
      expect(r.stderr, what).toContain("has no replayable schema");
      expect(r.stderr, what).toContain("run `replayable migrate` first");
      expect(r.stderr, what).not.toContain('relation "replayable.');
      expect(r.code, what).toBe(2);
    }
    // `run` stopped before it joined: the group never existed.
    expect((await admin.describeGroup(name)).state).toBe("Dead");
  }, 240_000);
});

describe("a projection whose migrations were never applied", () => {
  it("regression: checksum says to run `replayable migrate` (exit 2), not PostgreSQL's relation does not exist (break-it review)", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const r = await runCli(["checksum", "--projection", "ledger"], { DATABASE_URL: db.url });
    expect(r.stderr).toContain("projection ledger's tables ledger.ledger_accounts");
    expect(r.stderr).toContain("run `replayable migrate` first");
    expect(r.stderr).not.toContain("relation ");
    expect(r.code, r.stderr).toBe(2);
  }, 60_000);
});

describe("an empty flag", () => {
  it("regression: `status --brokers ''` is an error naming --brokers, not a fall-back to the default brokers", async () => {
    const r = await runCli(["status", "--projection", "ledger", "--brokers", ""], {
      KAFKA_BROKERS: BROKERS.join(","),
    });
    expect(r.stderr).toContain("--brokers: is empty");
    expect(r.code).toBe(2);
  }, 60_000);
});

describe("a folder without a config file", () => {
  it("says that the example projection is used, unless one is named (newcomer report)", async () => {
    const dir = tempFolder();
    const db = await createTestDatabase();
    onTestFinished(() => db.drop());
    const env = { DATABASE_URL: db.url, KAFKA_BROKERS: BROKERS.join(",") };
    const defaulted = await runCli(["dead-letters", "list"], env, { cwd: dir });
    expect(defaulted.code, defaulted.stderr).toBe(0);
    expect(defaulted.stderr).toContain(
      `replayable: no replayable.config.ts in ${dir} (and no REPLAYABLE_CONFIG or --config): using the example projection ledger; run the command where your config file is, \`replayable init\` to write one, or name a projection with --projection`,
    );
    const named = await runCli(["dead-letters", "list", "--projection", "ledger"], env, { cwd: dir });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stderr).not.toContain("no replayable.config.ts");
  });
});
