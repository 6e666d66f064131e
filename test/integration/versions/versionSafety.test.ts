/**
 * Regression tests for three findings on promote/rollback/drop-version (issue 16 follow-up), through
 * the CLI against the real Kafka and PostgreSQL: `promote --topic <another topic>` still measures the
 * lag on every topic the versions' groups consume; a lock timeout of promote or rollback is reported
 * as a refusal naming the view and `--lock-timeout-ms`; `drop-version` is a dry run until `--execute`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { testAdmin, uniqueName, type TestDatabase } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

/** A reader mid-transaction holding the stable view `<name>.totals` (ACCESS SHARE until COMMIT). */
async function holdView(db: TestDatabase, name: string): Promise<pg.Client> {
  const reader = new pg.Client({ connectionString: db.url });
  await reader.connect();
  await reader.query("BEGIN");
  await reader.query(`SELECT * FROM "${name}".totals`);
  return reader;
}

describe("promote, rollback and drop-version safety (issue 16 follow-up)", () => {
  it("promote --topic <another topic> --allow-different is refused while the version lags on the topic its group consumes; the audit row lists every topic checked", async () => {
    const bg = await versionedStack(admin, "bgs", 20);
    const { live, shadow } = await bg.buildVersion2();
    const { db, name, topic, cli } = bg;
    await bg.stop(shadow, 2);
    await bg.produceSales(200, 20);
    const other = uniqueName("bgs-other");
    await admin.createTopic(other, 1);
    const promote = [
      "promote",
      "--projection",
      name,
      "--version",
      "2",
      "--topic",
      other,
      "--allow-different",
    ];

    const refused = await cli(promote);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`version 2 of ${name} has not caught up`);
    expect(refused.stderr).toMatch(new RegExp(`  ${topic}:\\d checkpoint`));
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);

    const promoted = await cli([...promote, "--max-lag", "1000"]);
    expect(promoted.code, promoted.stderr).toBe(0);
    const audit = await db.pool.query<{
      offsets: { topics: string[]; lag: { topic: string; lag: string }[] };
    }>(
      "SELECT offsets FROM replayable.projection_version_audit WHERE projection = $1 AND action = 'promote'",
      [name],
    );
    const offsets = audit.rows[0]!.offsets;
    expect(offsets.topics).toEqual([topic, other].sort());
    expect([...new Set(offsets.lag.map((l) => l.topic))].sort()).toEqual([topic, other].sort());
    expect(offsets.lag.filter((l) => l.topic === topic).reduce((n, l) => n + Number(l.lag), 0)).toBe(200);
    await bg.stop(live, 1);
  }, 600_000);

  it("a reader holding a view past --lock-timeout-ms refuses promote and rollback naming the view; drop-version is a dry run until --execute", async () => {
    const bg = await versionedStack(admin, "bgs", 20);
    const { live, shadow } = await bg.buildVersion2();
    const { db, name, cli } = bg;
    const lockMessage = (verb: string) =>
      `replayable: ${verb} refused, nothing changed: a reader held ${name}.totals longer than --lock-timeout-ms (300 ms); run it again, or raise --lock-timeout-ms`;

    let reader = await holdView(db, name);
    const promote = ["promote", "--projection", name, "--version", "2"];
    const timedOut = await cli([...promote, "--lock-timeout-ms", "300"]);
    await reader.end();
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toContain(lockMessage("promote"));
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);
    const promoted = await cli(promote);
    expect(promoted.code, promoted.stderr).toBe(0);

    reader = await holdView(db, name);
    const rollback = ["rollback", "--projection", name];
    const rollbackTimedOut = await cli([...rollback, "--lock-timeout-ms", "300"]);
    await reader.end();
    expect(rollbackTimedOut.code).toBe(1);
    expect(rollbackTimedOut.stderr).toContain(lockMessage("rollback"));
    expect(await bg.states()).toEqual([
      [1, "retired"],
      [2, "live"],
    ]);
    const rolledBack = await cli(rollback);
    expect(rolledBack.code, rolledBack.stderr).toBe(0);

    // drop-version without --execute prints what it would delete and changes nothing.
    await bg.stop(shadow, 2);
    const drop = ["drop-version", "--projection", name, "--version", "2"];
    const dry = await cli(drop);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`Dry run: would drop version 2 (shadow) of projection ${name}`);
    expect(dry.stdout).toContain(`consumer group ${name}-v2 (committed offsets on 2 partitions)`);
    expect(dry.stdout).toContain(`schema ${name}_v2: table totals (5 rows)`);
    expect(dry.stdout).toContain(`migrations table replayable.__drizzle_migrations_${name}@v2`);
    expect(dry.stdout).toContain("dedupe state: 2 checkpoints, 0 event ids, 0 dead letters");
    expect(dry.stdout).toContain("Nothing changed: run it again with --execute to drop it.");
    expect(dry.stdout).not.toContain("md5");
    const withChecksums = await cli([...drop, "--checksums"]);
    expect(withChecksums.code, withChecksums.stderr).toBe(0);
    expect(withChecksums.stdout).toMatch(
      new RegExp(`schema ${name}_v2: table totals \\(5 rows, md5 [0-9a-f]{32}\\)`),
    );
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);
    expect((await admin.groupCommittedOffsets(`${name}-v2`)).length).toBe(2);
    const schema = await db.pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [`${name}_v2`]);
    expect(schema.rowCount).toBe(1);

    const dropped = await cli([...drop, "--execute"]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain(`Dropped version 2 of projection ${name}`);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "dropped"],
    ]);
    await bg.stop(live, 1);
  }, 600_000);
});
