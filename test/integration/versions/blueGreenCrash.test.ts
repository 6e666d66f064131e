/**
 * Crashes during a blue/green rebuild, against the real Kafka and PostgreSQL: the shadow's member
 * SIGKILLed during catch-up resumes from its own checkpoints when run again (its tables then equal
 * the live version's: nothing applied twice or lost), and the CLI SIGKILLed inside promote's
 * transaction changes nothing (readers keep version 1); promoting again succeeds.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { KafkaAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, startCli, startCliInTest } from "../../helpers/process.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
} from "../../helpers/stack.js";
import { sales, tempFolder, writeVersionedConfig } from "../../helpers/versionedConfig.js";

let admin: KafkaAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

describe("blue/green rebuild after crashes", () => {
  it("a shadow member killed during catch-up resumes; a promote killed before COMMIT changes nothing", async () => {
    const dir = tempFolder();
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const name = uniqueName("bgc");
    const topic = uniqueName("bgc-topic");
    writeVersionedConfig(dir, name, topic);
    await admin.createTopic(topic, 2);
    await produceRecords(testKafka(), topic, sales(60));
    const env = { DATABASE_URL: db.url, REPLAYABLE_MAX_BATCH_RECORDS: "5" };
    const cli = (args: string[], extra: Record<string, string> = {}) =>
      runCli(args, { ...env, ...extra }, { cwd: dir });
    const noMembers = (group: string) =>
      waitFor(`group ${group} to have no members`, async () =>
        (await admin.describeGroup(group)).members.length === 0 ? true : undefined,
      );
    expect((await cli(["migrate"])).code).toBe(0);
    const live = startCliInTest(["run"], env, { cwd: dir });
    await waitForCaughtUp(admin, `${name}-v1`, topic);
    live.signal("SIGTERM");
    expect((await live.exited).code).toBe(0);
    const created = await cli([
      "rebuild",
      "--projection",
      name,
      "--group",
      name,
      "--blue-green",
      "--execute",
      "--no-run",
    ]);
    expect(created.code, created.stderr).toBe(0);

    // The shadow's member dies (SIGKILL) right after its third COMMIT, before that offset commit.
    const killed = startCli(
      ["run", "--version", "2"],
      { ...env, REPLAYABLE_FAILPOINTS: "after-db-commit=kill@3" },
      {
        cwd: dir,
      },
    );
    expect((await killed.exited).signal).toBe("SIGKILL");
    const partial = await db.pool.query<{ n: string }>(
      "SELECT coalesce(sum(next_offset), 0)::text AS n FROM replayable.checkpoints WHERE projection = $1",
      [`${name}@v2`],
    );
    expect(Number(partial.rows[0]!.n)).toBeGreaterThan(0);
    expect(Number(partial.rows[0]!.n)).toBeLessThan(60);
    const shadow = startCliInTest(["run", "--version", "2"], env, { cwd: dir });
    await waitForCaughtUp(admin, `${name}-v2`, topic, 120_000);
    shadow.signal("SIGTERM");
    expect((await shadow.exited).code).toBe(0);
    await noMembers(`${name}-v2`);

    // promote dies (SIGKILL) inside its transaction, after switching the views, before COMMIT.
    const dying = startCli(
      ["promote", "--projection", name, "--version", "2"],
      {
        ...env,
        REPLAYABLE_FAILPOINTS: "promote-before-commit=kill",
      },
      { cwd: dir },
    );
    expect((await dying.exited).signal).toBe("SIGKILL");
    const views = async () =>
      (
        await db.pool.query<{ definition: string }>(
          "SELECT definition FROM pg_views WHERE schemaname = $1 AND viewname = 'totals'",
          [name],
        )
      ).rows.map((r) => /FROM (\S+)\.totals/.exec(r.definition)?.[1]);
    expect(await views()).toEqual([`${name}_v1`]);
    const states = async () =>
      (
        await db.pool.query<{ version: number; state: string }>(
          "SELECT version, state FROM replayable.projection_versions WHERE projection = $1 ORDER BY version",
          [name],
        )
      ).rows.map((r) => [r.version, r.state]);
    expect(await states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);

    // Run again: the shadow equals the live version (the killed member applied nothing twice).
    const promoted = await cli(["promote", "--projection", name, "--version", "2"]);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toMatch(/totals +5 +[0-9a-f]{32} +5 +[0-9a-f]{32} +yes/);
    expect(await views()).toEqual([`${name}_v2`]);
    expect(await states()).toEqual([
      [1, "retired"],
      [2, "live"],
    ]);
    const totals = await db.pool.query<{ sales: string }>(
      `SELECT sum(sales)::text AS sales FROM "${name}".totals`,
    );
    expect(totals.rows[0]?.sales).toBe("60");
  });
});
