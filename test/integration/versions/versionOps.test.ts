/**
 * The operator commands on a versioned projection's versions, through the CLI against the real
 * Kafka and PostgreSQL (docs/replay.md "Blue/green rebuild"): `replay`, `prune` and `dead-letters`
 * act on the live version by default and on `--version N` otherwise (its key `<name>@vN`, its group
 * `<group>-vN`); `drop-version` deletes the version's group, then its schema and dedupe state, and
 * a rerun after a crash between the two finishes the job; `rollback` restores the old version and
 * its live consumption; every audit row says who, which offsets and which checksums.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli } from "../../helpers/process.js";
import { createTestDatabase, testAdmin, testKafka, waitFor, type TestDatabase } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

async function count(db: TestDatabase, table: string, key: string, where = "true"): Promise<number> {
  const r = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM replayable.${table} WHERE projection = $1 AND ${where}`,
    [key],
  );
  return r.rows[0]!.n;
}

async function stableSales(db: TestDatabase, name: string): Promise<string> {
  const r = await db.pool.query<{ sales: string }>(
    `SELECT coalesce(sum(sales), 0)::text AS sales FROM "${name}".totals`,
  );
  return r.rows[0]!.sales;
}

interface AuditRow {
  action: string;
  version: number;
  from_version: number | null;
  os_user: string;
  host: string;
  at: string;
  offsets: Record<string, unknown>;
  checksums: unknown;
}

async function auditRows(db: TestDatabase, name: string): Promise<AuditRow[]> {
  const r = await db.pool.query<AuditRow>(
    "SELECT *, at::text AS at FROM replayable.projection_version_audit WHERE projection = $1 ORDER BY id",
    [name],
  );
  return r.rows;
}

const sum = (
  rows: readonly { nextOffset?: string; highWatermark?: string }[],
  field: "nextOffset" | "highWatermark",
) => rows.reduce((n, r) => n + Number(r[field]), 0);

describe("operator commands on versions", () => {
  it("replay, prune and dead-letters act on the live version by default and on --version N otherwise; a plain projection, an unknown or a dropped version is refused naming --version", async () => {
    const bg = await versionedStack(admin, "bgo", 20, { BG_DEDUPE: "event-id" });
    const { db, name, topic, cli } = bg;
    await produceRecords(testKafka(), topic, [{ key: "bad", value: "not json" }]);
    const { live, shadow } = await bg.buildVersion2();
    await bg.stop(live, 1);
    await bg.stop(shadow, 2);
    for (const key of [`${name}@v1`, `${name}@v2`]) {
      expect(await count(db, "dead_letters", key)).toBe(1);
      expect(await count(db, "processed_events", key)).toBe(20);
    }
    expect(await count(db, "dead_letters", name)).toBe(0);

    // dead-letters: the live version by default, --version 2 otherwise.
    const listed = await cli(["dead-letters", "list", "--projection", name, "--output", "json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { projection: string }[]).map((l) => l.projection)).toEqual([
      `${name}@v1`,
    ]);
    const listed2 = await cli(["dead-letters", "list", "--projection", name, "--version", "2"]);
    expect(listed2.code, listed2.stderr).toBe(0);
    expect(listed2.stdout).toContain(
      `Version 2 (shadow) of projection ${name}: dedupe key ${name}@v2, consumer group ${name}-v2`,
    );
    const discarded = await cli([
      "dead-letters",
      "discard",
      "--projection",
      name,
      "--version",
      "2",
      "--execute",
    ]);
    expect(discarded.code, discarded.stderr).toBe(0);
    expect(discarded.stdout).toContain("discarded 1 dead letter");
    expect(await count(db, "dead_letters", `${name}@v2`, "resolved_at IS NULL")).toBe(0);
    expect(await count(db, "dead_letters", `${name}@v1`, "resolved_at IS NULL")).toBe(1);
    const retry = await cli(["dead-letters", "retry", "--projection", name]);
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toContain(`Version 1 (live) of projection ${name}`);
    expect(retry.stdout).toContain("dry run: would retry 1 dead letter");

    // replay: the version's group and checkpoints.
    const replay = ["replay", "--projection", name, "--group", name, "--all-topics", "--to-earliest"];
    const dry = await cli([...replay, "--output", "json"]);
    expect(dry.code, dry.stderr).toBe(0);
    const plan = JSON.parse(dry.stdout) as {
      version: number;
      groupId: string;
      projection: string;
      totals: { duplicates: string };
    };
    expect([plan.version, plan.groupId, plan.projection, plan.totals.duplicates]).toEqual([
      1,
      `${name}-v1`,
      `${name}@v1`,
      "21",
    ]);
    const executed = await cli([...replay, "--version", "2", "--execute"]);
    expect(executed.code, executed.stderr).toBe(0);
    expect(executed.stdout).toContain(`Version 2 (shadow) of projection ${name}`);
    expect(executed.stdout).toContain(`Reset the committed offsets of group ${name}-v2`);
    expect((await admin.committedOffsets(`${name}-v2`, [topic])).map((c) => c.offset)).toEqual(["0", "0"]);
    const ends = (await admin.topicOffsets(topic)).map((p) => p.highWatermark);
    expect((await admin.committedOffsets(`${name}-v1`, [topic])).map((c) => c.offset)).toEqual(ends);

    // prune: the version's event ids.
    const pruned = await cli(["prune", "--projection", name, "--version", "2", "--output", "json"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const prune = JSON.parse(pruned.stdout) as {
      version: number;
      projection: string;
      totals: { eventIds: string };
    };
    expect([prune.version, prune.projection, prune.totals.eventIds]).toEqual([2, `${name}@v2`, "20"]);
    const prunedLive = await cli(["prune", "--projection", name]);
    expect(prunedLive.code, prunedLive.stderr).toBe(0);
    expect(prunedLive.stdout).toContain(`Version 1 (live) of projection ${name}`);

    // Bad --version and --group values.
    const unknown = await cli(["dead-letters", "list", "--projection", name, "--version", "3"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      `--version: projection ${name} has no version 3; its versions: 1 (live), 2 (shadow)`,
    );
    const notNumber = await cli([...replay, "--version", "two"]);
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toContain('--version: must be a version number (1, 2, ...), got "two"');
    const otherGroup = await cli([
      "replay",
      "--projection",
      name,
      "--group",
      "other",
      "--all-topics",
      "--to-earliest",
    ]);
    expect(otherGroup.code).toBe(2);
    expect(otherGroup.stderr).toContain(
      `--group: version 1 of projection ${name} consumes as group ${name}-v1, not other`,
    );
    const plain = await createTestDatabase(true);
    onTestFinished(() => plain.drop());
    const notVersioned = await runCli([
      "prune",
      "--projection",
      "ledger",
      "--version",
      "1",
      "--database-url",
      plain.url,
    ]);
    expect(notVersioned.code).toBe(2);
    expect(notVersioned.stderr).toContain("--version: projection ledger is not versioned");

    const dropped = await cli(["drop-version", "--projection", name, "--version", "2", "--execute"]);
    expect(dropped.code, dropped.stderr).toBe(0);
    const gone = await cli(["dead-letters", "list", "--projection", name, "--version", "2"]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain(`--version: projection ${name} has no version 2 (it was dropped)`);
  }, 600_000);

  it("drop-version deletes the group, then the schema, migrations table, checkpoints, event ids and dead letters; rerun after a crash between the two finishes the job", async () => {
    const bg = await versionedStack(admin, "bgo", 20, { BG_DEDUPE: "event-id" });
    const { db, name, topic, cli } = bg;
    await produceRecords(testKafka(), topic, [{ key: "bad", value: "not json" }]);
    const { live, shadow } = await bg.buildVersion2();
    await bg.stop(shadow, 2);
    const key = `${name}@v2`;
    const checkpoints = await db.pool.query<{ nextOffset: string }>(
      `SELECT next_offset AS "nextOffset" FROM replayable.checkpoints WHERE projection = $1`,
      [key],
    );
    expect(sum(checkpoints.rows, "nextOffset")).toBe(21);

    const drop = ["drop-version", "--projection", name, "--version", "2", "--execute"];
    const crashed = await cli(drop, { REPLAYABLE_FAILPOINTS: "drop-version-group-deleted=kill" });
    expect(crashed.code).not.toBe(0);
    expect(crashed.stderr).toContain("failpoint drop-version-group-deleted: SIGKILL");
    // Kafka first: the group is gone, the version and its state are all still there.
    expect(await admin.groupCommittedOffsets(`${name}-v2`)).toEqual([]);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);
    expect(await count(db, "processed_events", key)).toBe(20);

    const rerun = await cli(drop);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toContain(
      `Dropped version 2 of projection ${name}: consumer group ${name}-v2 (already gone), schema ${name}_v2 and its dedupe state (2 checkpoints, 20 event ids, 1 dead letters)`,
    );
    const left = await db.pool.query<{ what: string }>(
      `SELECT 'schema' AS what FROM pg_namespace WHERE nspname = $1
       UNION ALL SELECT 'migrations' FROM pg_tables WHERE schemaname = 'replayable' AND tablename = $2
       UNION ALL SELECT 'checkpoints' FROM replayable.checkpoints WHERE projection = $3
       UNION ALL SELECT 'event ids' FROM replayable.processed_events WHERE projection = $3
       UNION ALL SELECT 'dead letters' FROM replayable.dead_letters WHERE projection = $3`,
      [`${name}_v2`, `__drizzle_migrations_${key}`, key],
    );
    expect(left.rows).toEqual([]);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "dropped"],
    ]);
    const audit = (await auditRows(db, name)).find((r) => r.action === "drop")!;
    expect(audit.version).toBe(2);
    expect(audit.os_user).not.toBe("");
    const offsets = audit.offsets as {
      checkpoints: { nextOffset: string }[];
      group: { groupId: string; deletion: string };
    };
    expect(sum(offsets.checkpoints, "nextOffset")).toBe(21);
    expect([offsets.group.groupId, offsets.group.deletion]).toEqual([`${name}-v2`, "absent"]);
    // Row counts by default: no MD5, which reads and sorts every row (--checksums adds it).
    expect(audit.checksums).toEqual([{ table: `${name}_v2.totals`, rows: "5" }]);

    // The live version is untouched and keeps consuming.
    await bg.produceSales(5, 20);
    await bg.waitForCaughtUp(1);
    expect(await stableSales(db, name)).toBe("25");
    await bg.stop(live, 1);
  }, 600_000);

  it("rollback restores the old version and its live consumption; its audit row records both versions' checkpoints, high watermarks and checksums", async () => {
    const bg = await versionedStack(admin, "bgo", 30);
    const { db, name, cli } = bg;
    const { live, shadow } = await bg.buildVersion2();
    const promoted = await cli(["promote", "--projection", name, "--version", "2"]);
    expect(promoted.code, promoted.stderr).toBe(0);
    // The operator retires version 1's member; version 2's serves on alone.
    await bg.stop(live, 1);
    await bg.produceSales(10, 30);
    await bg.waitForCaughtUp(2);
    expect(await stableSales(db, name)).toBe("40");

    const rolledBack = await cli(["rollback", "--projection", name]);
    expect(rolledBack.code, rolledBack.stderr).toBe(0);
    expect(rolledBack.stdout).toContain(`Rolled back projection ${name}: version 1 is live (was 2)`);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);
    const audit = (await auditRows(db, name)).find((r) => r.action === "rollback")!;
    expect([audit.version, audit.from_version]).toEqual([1, 2]);
    expect(audit.os_user).not.toBe("");
    expect(audit.host).not.toBe("");
    type Lag = { partition: number; checkpoint: string; highWatermark: string };
    const offsets = audit.offsets as { live: Lag[]; restored: Lag[] };
    expect(offsets.live.map((p) => p.partition)).toEqual([0, 1]);
    expect(
      sum(
        offsets.live.map((p) => ({ nextOffset: p.checkpoint })),
        "nextOffset",
      ),
    ).toBe(40);
    expect(sum(offsets.live, "highWatermark")).toBe(40);
    expect(
      sum(
        offsets.restored.map((p) => ({ nextOffset: p.checkpoint })),
        "nextOffset",
      ),
    ).toBe(30);
    expect(sum(offsets.restored, "highWatermark")).toBe(40);
    const checksums = audit.checksums as {
      table: string;
      live: { rows: string };
      candidate: { rows: string };
      equal: boolean;
    }[];
    expect(checksums.map((c) => [c.table, c.live.rows, c.candidate.rows, c.equal])).toEqual([
      ["totals", "5", "5", false],
    ]);

    // The stable views show version 1 as its member left it, until a member runs it again: a run
    // without --version runs the live version, which applies what it missed and what comes next.
    expect(await stableSales(db, name)).toBe("30");
    const restarted = bg.run([]);
    await bg.produceSales(10, 40);
    await bg.waitForCaughtUp(1);
    await waitFor("the stable views to show all 50 sales", async () =>
      (await stableSales(db, name)) === "50" ? true : undefined,
    );
    expect(
      await db.pool.query("SELECT 1 FROM replayable.checkpoints WHERE projection = $1", [name]),
    ).toHaveProperty("rowCount", 0);

    // Every audit row says who and when; drop the group's last committed offsets.
    await bg.waitForCaughtUp(2);
    await bg.stop(shadow, 2);
    const dropped = await cli([
      "drop-version",
      "--projection",
      name,
      "--version",
      "2",
      "--execute",
      "--checksums",
    ]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain(`consumer group ${name}-v2 (deleted)`);
    expect(await admin.groupCommittedOffsets(`${name}-v2`)).toEqual([]);
    const rows = await auditRows(db, name);
    expect(rows.map((r) => [r.action, r.version])).toEqual([
      ["create", 1],
      ["create", 2],
      ["promote", 2],
      ["rollback", 1],
      ["drop", 2],
    ]);
    for (const r of rows) expect([r.os_user, r.host, r.at].every((v) => v !== "")).toBe(true);
    const drop = rows[4]!.offsets as { group: { deletion: string; committedOffsets: { offset: string }[] } };
    expect(drop.group.deletion).toBe("deleted");
    expect(drop.group.committedOffsets.reduce((n, c) => n + Number(c.offset), 0)).toBe(50);
    // --checksums: the dropped tables' MD5s in the audit row besides their row counts.
    expect(rows[4]!.checksums).toEqual([
      { table: `${name}_v2.totals`, rows: "5", md5: expect.stringMatching(/^[0-9a-f]{32}$/) as string },
    ]);
    await bg.stop(restarted, 1);
  }, 600_000);
});
