/**
 * A versioned projection (docs/design.md "Blue/green versions") through the CLI against the real
 * Kafka and PostgreSQL: `migrate` creates version 1 (schema, views, registry row, audit row), `run`
 * applies into `<name>_v1` under its own dedupe key and group, readers see the rows through the
 * stable views; `--version` of a plain projection is refused.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { runCli } from "../../helpers/process.js";
import { createTestDatabase, testAdmin, uniqueName } from "../../helpers/stack.js";
import { versionedProject, versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

describe("a versioned projection's first version", () => {
  it("migrate creates version 1 with views in the stable schema; run applies into it under name@v1 and group -v1", async () => {
    const bg = await versionedStack(admin, "bg", 30);
    const { db, name, migrated, cli } = bg;
    // versionedStack ran migrate and expected exit code 0; it printed nothing on stderr either.
    expect(migrated.stderr).toBe("");
    const versions = await db.pool.query(
      "SELECT version, schema_name, group_id, state FROM replayable.projection_versions WHERE projection = $1",
      [name],
    );
    expect(versions.rows).toEqual([
      { version: 1, schema_name: `${name}_v1`, group_id: `${name}-v1`, state: "live" },
    ]);
    const views = await db.pool.query<{ definition: string }>(
      "SELECT definition FROM pg_views WHERE schemaname = $1 AND viewname = 'totals'",
      [name],
    );
    expect(views.rows[0]?.definition).toContain(`${name}_v1.totals`);
    const audit = await db.pool.query("SELECT action, version FROM replayable.projection_version_audit");
    expect(audit.rows).toEqual([{ action: "create", version: 1 }]);
    // migrate again: nothing new
    expect((await cli(["migrate"])).code).toBe(0);
    expect((await db.pool.query("SELECT 1 FROM replayable.projection_versions")).rowCount).toBe(1);

    const run = bg.run([]);
    await bg.waitForCaughtUp(1);
    run.signal("SIGTERM");
    expect((await run.exited).code).toBe(0);
    const totals = await db.pool.query<{ sales: string }>(
      `SELECT sum(sales)::text AS sales FROM "${name}".totals`,
    );
    expect(totals.rows[0]?.sales).toBe("30");
    const checkpoints = await db.pool.query<{ projection: string }>(
      "SELECT DISTINCT projection FROM replayable.checkpoints",
    );
    expect(checkpoints.rows).toEqual([{ projection: `${name}@v1` }]);
  });

  it("refuses --version for a projection that is not versioned", async () => {
    const db = await createTestDatabase(true);
    onTestFinished(() => db.drop());
    const r = await runCli(["run", "--projection", "ledger", "--version", "2", "--database-url", db.url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--version: projection ledger is not versioned");
  });

  it("migrate refuses a plain projection's missing table before it creates a versioned projection's version 1", async () => {
    const { dir, db, name, cli } = await versionedProject("bg");
    const plain = uniqueName("plain");
    // Beside it, a plain projection whose table nothing creates.
    const file = join(dir, "replayable.config.ts");
    const config = readFileSync(file, "utf8")
      .replace(
        "export default defineConfig({",
        `const plain = defineProjection<unknown>({
  name: ${JSON.stringify(plain)},
  dedupe: { kind: "offset" as const },
  topics: ["unused"],
  tables: [${JSON.stringify(`${plain}.rows`)}],
  decode: (record) => record.value,
  async apply() {},
});

export default defineConfig({`,
      )
      .replace("projections: [sales],", "projections: [sales, plain],");
    writeFileSync(file, config);

    const migrated = await cli(["migrate"]);
    expect(migrated.code, migrated.stderr).toBe(2);
    expect(migrated.stderr).toContain(
      `projection ${plain}: table ${plain}.rows does not exist in the database`,
    );
    // Nothing of the versioned projection was created: no version, no schema, no views.
    const made = await db.pool.query<{ what: string }>(
      `SELECT 'version' AS what FROM replayable.projection_versions WHERE projection = $1
       UNION ALL SELECT 'schema ' || nspname FROM pg_namespace WHERE nspname IN ($1, $2)`,
      [name, `${name}_v1`],
    );
    expect(made.rows).toEqual([]);
  });
});
