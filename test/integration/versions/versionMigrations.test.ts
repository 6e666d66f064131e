/**
 * A version whose schema lacks the code's migrations is not run (docs/design.md "Blue/green
 * versions"), against the real Kafka and PostgreSQL: version 1 is created with the original code;
 * the changed code (`BG_VARIANT=changed`, one more migration) is refused by `run` and
 * `run --version 1` with exit 2 before any record is read, `migrate` says the live version lacks
 * the migration instead of listing the projection as migrated; a new version made by the changed
 * code runs, and the original code is refused as that version's member (migrations it does not know).
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { KafkaAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, startCliInTest } from "../../helpers/process.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
  type TestDatabase,
} from "../../helpers/stack.js";
import { sales, tempFolder, writeVersionedConfig } from "../../helpers/versionedConfig.js";

let admin: KafkaAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

/** The checkpoint rows of version `version` of `name` (none: no record was applied). */
async function checkpoints(db: TestDatabase, name: string, version: number): Promise<number> {
  const r = await db.pool.query("SELECT 1 FROM replayable.checkpoints WHERE projection = $1", [
    `${name}@v${version}`,
  ]);
  return r.rowCount ?? 0;
}

describe("a version whose migrations are not the code's", () => {
  it("is refused by run (exit 2, naming the missing migration and the fix) and by migrate's report; a new version runs the changed code", async () => {
    const dir = tempFolder();
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const name = uniqueName("bgm");
    const topic = uniqueName("bgm-topic");
    writeVersionedConfig(dir, name, topic);
    await admin.createTopic(topic, 2);
    await produceRecords(testKafka(), topic, sales(20));
    const env = { DATABASE_URL: db.url };
    const changed = { ...env, BG_VARIANT: "changed" };
    const cli = (args: string[], e: Record<string, string> = env) => runCli(args, e, { cwd: dir });

    const created = await cli(["migrate"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`migrations applied: replayable, ${name}`);

    // migrate with the changed code: says version 1 lacks 0001, does not list it as migrated.
    const migrated = await cli(["migrate"], changed);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).not.toContain(`replayable, ${name}`);
    expect(migrated.stdout).toContain(
      `projection ${name}: version 1 lacks migrations 0001_step; migrate never changes an existing version: create a new version with rebuild --blue-green`,
    );

    for (const args of [["run"], ["run", "--version", "1"], ["run", "--no-migrate"]]) {
      const refused = await cli(args, changed);
      expect(refused.code, `${args.join(" ")}: ${refused.stderr}`).toBe(2);
      expect(refused.stderr).toContain(
        `version 1 of projection ${name} lacks the code's migrations 0001_step`,
      );
      expect(refused.stderr).toContain(
        `create a new version with \`replayable rebuild --projection ${name} --blue-green --execute\` (the changed code gets a new version), or run the code this version was created with`,
      );
    }
    expect(await checkpoints(db, name, 1)).toBe(0);
    expect((await admin.describeGroup(`${name}-v1`)).members).toEqual([]);

    // The changed code gets a new version, and runs as its member.
    const rebuilt = await cli(
      ["rebuild", "--projection", name, "--group", name, "--blue-green", "--execute", "--no-run"],
      changed,
    );
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    const member = startCliInTest(["run", "--version", "2"], changed, { cwd: dir });
    await waitForCaughtUp(admin, `${name}-v2`, topic);
    const notes = await db.pool.query<{ note: string; sales: string }>(
      `SELECT note, sum(sales)::text AS sales FROM "${name}_v2".totals GROUP BY note`,
    );
    expect(notes.rows).toEqual([{ note: "changed", sales: "20" }]);
    member.signal("SIGTERM");
    expect((await member.exited).code).toBe(0);
    await waitFor(`group ${name}-v2 to have no members`, async () =>
      (await admin.describeGroup(`${name}-v2`)).members.length === 0 ? true : undefined,
    );

    // The original code as version 2's member: the version has a migration it does not know.
    const older = await cli(["run", "--version", "2", "--no-migrate"]);
    expect(older.code, older.stderr).toBe(2);
    expect(older.stderr).toContain(
      `version 2 of projection ${name} has migrations the code does not know: when 1767225601000`,
    );
    expect(older.stderr).toContain("run the code this version was created with");
    // And version 1 still runs with its own code.
    const own = startCliInTest(["run", "--version", "1"], env, { cwd: dir });
    await waitForCaughtUp(admin, `${name}-v1`, topic);
    own.signal("SIGTERM");
    expect((await own.exited).code).toBe(0);
    expect(await checkpoints(db, name, 1)).toBeGreaterThan(0);
  }, 600_000);
});
