/**
 * Blue/green rebuilds through the CLI against the real Kafka and PostgreSQL (docs/design.md
 * "Blue/green versions"): `rebuild --blue-green` creates the next version beside the live one,
 * `run --version N` builds it from the log while the live member keeps consuming, `promote` is
 * refused while it lags or differs (allowed with --allow-different) and otherwise switches the
 * views, `rollback` switches back, `drop-version` is refused for the live version and cleans up
 * another one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { scrapeMetric } from "../../helpers/process.js";
import { testAdmin, waitFor, type TestDatabase } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

async function viewTarget(db: TestDatabase, name: string): Promise<string | undefined> {
  const r = await db.pool.query<{ definition: string }>(
    "SELECT definition FROM pg_views WHERE schemaname = $1 AND viewname = 'totals'",
    [name],
  );
  return /FROM (\S+)\.totals/.exec(r.rows[0]?.definition ?? "")?.[1];
}

async function stableTotals(db: TestDatabase, name: string): Promise<{ sales: string; cents: string }> {
  const r = await db.pool.query<{ sales: string; cents: string }>(
    `SELECT coalesce(sum(sales), 0)::text AS sales, coalesce(sum(cents), 0)::text AS cents FROM "${name}".totals`,
  );
  return r.rows[0]!;
}

const centsOf = (count: number, factor = 1) =>
  String(Array.from({ length: count }, (_, i) => (100 + i) * factor).reduce((a, b) => a + b, 0));

describe("blue/green rebuild", () => {
  it("builds version 2 from the log while version 1 serves, refuses promote while it lags, promotes it equal, rolls back, drops", async () => {
    const bg = await versionedStack(admin, "bg", 40);
    const { db, name, topic, cli, run } = bg;
    const live = run([]);
    await bg.waitForCaughtUp(1);
    expect(await stableTotals(db, name)).toEqual({ sales: "40", cents: centsOf(40) });

    const rebuild = ["rebuild", "--projection", name, "--group", name, "--blue-green"];
    const dry = await cli(rebuild);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      `Dry run (nothing changed): blue/green rebuild of projection ${name}: version 2 (schema ${name}_v2, group ${name}-v2) beside the live version 1`,
    );
    expect(await bg.states()).toEqual([[1, "live"]]);

    const created = await cli([...rebuild, "--execute", "--no-run"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`Created version 2 of projection ${name}`);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);
    expect((await admin.committedOffsets(`${name}-v2`, [topic])).map((c) => c.offset)).toEqual(["0", "0"]);
    expect(await viewTarget(db, name)).toBe(`${name}_v1`);

    const lagging = await cli(["promote", "--projection", name, "--version", "2"]);
    expect(lagging.code).toBe(1);
    expect(lagging.stderr).toContain(
      `promote refused, nothing changed: version 2 of ${name} has not caught up`,
    );

    const status = await cli(["status", "--projection", name, "--output", "json"]);
    expect(status.code, status.stderr).toBe(0);
    const side = JSON.parse(status.stdout) as {
      versions: { version: number; state: string; groupId: string; rows: { lag: string }[] }[];
    };
    expect(
      side.versions.map((v) => [
        v.version,
        v.state,
        v.groupId,
        v.rows.reduce((n, r) => n + Number(r.lag), 0),
      ]),
    ).toEqual([
      [1, "live", `${name}-v1`, 0],
      [2, "shadow", `${name}-v2`, 40],
    ]);

    const shadow = run(["--version", "2"]);
    const port = await shadow.metricsPort();
    await bg.waitForCaughtUp(2);
    // The shadow's member labels its samples with its version.
    await waitFor("the shadow's applied records on /metrics with version 2", async () =>
      (await scrapeMetric(port, "replayable_records_applied_total", { version: "2" })) === 40
        ? true
        : undefined,
    );
    const promoted = await cli(["promote", "--projection", name, "--version", "2"]);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toContain(`Promoted projection ${name}: version 2 is live (was 1)`);
    expect(await viewTarget(db, name)).toBe(`${name}_v2`);
    expect(await bg.states()).toEqual([
      [1, "retired"],
      [2, "live"],
    ]);
    const audit = await db.pool.query<{ action: string; version: number; checksums: { equal: boolean }[] }>(
      "SELECT action, version, checksums FROM replayable.projection_version_audit WHERE projection = $1 ORDER BY id",
      [name],
    );
    expect(audit.rows.map((r) => [r.action, r.version])).toEqual([
      ["create", 1],
      ["create", 2],
      ["promote", 2],
    ]);
    expect(audit.rows[2]!.checksums.map((c) => c.equal)).toEqual([true]);

    // Both members keep consuming: records produced after the switch reach both versions.
    await bg.produceSales(10, 40);
    await bg.waitForCaughtUp(1);
    await bg.waitForCaughtUp(2);
    expect(await stableTotals(db, name)).toEqual({ sales: "50", cents: centsOf(50) });

    const rolledBack = await cli(["rollback", "--projection", name]);
    expect(rolledBack.code, rolledBack.stderr).toBe(0);
    expect(rolledBack.stdout).toContain(`Rolled back projection ${name}: version 1 is live (was 2)`);
    expect(await viewTarget(db, name)).toBe(`${name}_v1`);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);
    expect(await stableTotals(db, name)).toEqual({ sales: "50", cents: centsOf(50) });

    const dropLive = await cli(["drop-version", "--projection", name, "--version", "1", "--execute"]);
    expect(dropLive.code).toBe(1);
    expect(dropLive.stderr).toContain(`version 1 is the live version of ${name}`);
    const dropRunning = await cli(["drop-version", "--projection", name, "--version", "2", "--execute"]);
    expect(dropRunning.code).toBe(1);
    expect(dropRunning.stderr).toContain("drop-version refused, nothing changed");

    await bg.stop(shadow, 2);
    const dropped = await cli(["drop-version", "--projection", name, "--version", "2", "--execute"]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain(
      `Dropped version 2 of projection ${name}: consumer group ${name}-v2 (deleted), schema ${name}_v2`,
    );
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "dropped"],
    ]);
    const left = await db.pool.query(
      "SELECT 1 FROM pg_namespace WHERE nspname = $1 UNION ALL SELECT 1 FROM replayable.checkpoints WHERE projection = $2",
      [`${name}_v2`, `${name}@v2`],
    );
    expect(left.rowCount).toBe(0);
    expect(await stableTotals(db, name)).toEqual({ sales: "50", cents: centsOf(50) });
    await bg.stop(live, 1);
  }, 600_000);

  it("a changed projection: promote is refused while its tables differ, allowed with --allow-different (the differing table printed)", async () => {
    const bg = await versionedStack(admin, "bg", 30);
    const { db, name, cli, run } = bg;
    const live = run([]);
    await bg.waitForCaughtUp(1);
    await bg.stop(live, 1);
    const changed = { BG_VARIANT: "changed" };
    await bg.createVersion(changed);
    const shadow = run(["--version", "2"], changed);
    await bg.waitForCaughtUp(2);
    await bg.stop(shadow, 2);

    const refused = await cli(["promote", "--projection", name, "--version", "2"], changed);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `version 2 of ${name} differs from the live version 1 at the same checkpoints:`,
    );
    expect(refused.stderr).toMatch(
      / {2}totals: live 5 rows, md5 [0-9a-f]{32}; version 2 5 rows, md5 [0-9a-f]{32}/,
    );
    expect(refused.stderr).toContain("--allow-different");
    expect(await viewTarget(db, name)).toBe(`${name}_v1`);

    const promoted = await cli(
      ["promote", "--projection", name, "--version", "2", "--allow-different"],
      changed,
    );
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toContain("tables that differ from version 1: totals");
    expect(await stableTotals(db, name)).toEqual({ sales: "30", cents: centsOf(30, 2) });
    const note = await db.pool.query<{ note: string }>(`SELECT DISTINCT note FROM "${name}".totals`);
    expect(note.rows).toEqual([{ note: "changed" }]);
    const forced = await db.pool.query<{ forced: boolean }>(
      "SELECT forced FROM replayable.projection_version_audit WHERE projection = $1 AND action = 'promote'",
      [name],
    );
    expect(forced.rows).toEqual([{ forced: true }]);
  });
});
