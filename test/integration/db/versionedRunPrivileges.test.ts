/**
 * Issue 26 item 11: `run` of a blue/green versioned projection reads replayable.projection_versions
 * and the version's migrations table; a runtime role without SELECT on them got a raw "permission
 * denied". The start-up check names both GRANTs, and docs/security.md lists them.
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { checkVersionedRunPrivileges } from "../../../src/db/privileges.js";
import { versionedStack } from "../../helpers/versionedStack.js";
import { uniqueName, useStack } from "../../helpers/stack.js";

const admin = "postgres://postgres@127.0.0.1:5432";
const db = uniqueName("privs")
  .toLowerCase()
  .replaceAll(/[^a-z0-9_]/g, "_");
const role = uniqueName("runtime")
  .toLowerCase()
  .replaceAll(/[^a-z0-9_]/g, "_");
const migrations = "__drizzle_migrations_orders@v2";
const stack = useStack();

async function sql(database: string, ...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: `${admin}/${database}` });
  await client.connect();
  try {
    for (const s of statements) await client.query(s);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await sql("test", `CREATE DATABASE ${db}`, `CREATE ROLE ${role} LOGIN`);
  await sql(
    db,
    "CREATE SCHEMA replayable",
    "CREATE TABLE replayable.projection_versions (projection text, version int)",
    `CREATE TABLE replayable."${migrations}" (id int)`,
    `GRANT USAGE ON SCHEMA replayable TO ${role}`,
  );
});

afterAll(async () => {
  await sql("test", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, `DROP ROLE IF EXISTS ${role}`);
});

describe("a versioned run's grants", () => {
  it("are checked at start-up, each missing one named as a GRANT", async () => {
    const pool = new pg.Pool({ connectionString: `postgres://${role}@127.0.0.1:5432/${db}`, max: 1 });
    try {
      await expect(checkVersionedRunPrivileges(pool)).rejects.toThrow(
        `GRANT SELECT ON replayable.projection_versions TO ${role};`,
      );
      await expect(checkVersionedRunPrivileges(pool, migrations)).rejects.toThrow(
        `GRANT SELECT ON replayable."${migrations}" TO ${role};`,
      );
      await sql(db, `GRANT SELECT ON replayable.projection_versions, replayable."${migrations}" TO ${role}`);
      await expect(checkVersionedRunPrivileges(pool, migrations)).resolves.toBeUndefined();
    } finally {
      await pool.end();
    }
  });

  it("are listed in docs/security.md", () => {
    const doc = readFileSync(new URL("../../../docs/security.md", import.meta.url), "utf8");
    expect(doc).toContain("GRANT SELECT ON replayable.projection_versions TO replayable_app;");
    expect(doc).toMatch(
      /GRANT SELECT ON replayable\."__drizzle_migrations_<projection>@v<N>" TO replayable_app;/,
    );
  });

  it("`run` of a versioned projection as a role without them exits with the GRANT, before reading the registry", async () => {
    const bg = await versionedStack(stack.admin, "privs", 4);
    const runtime = uniqueName("runtime_run")
      .toLowerCase()
      .replaceAll(/[^a-z0-9_]/g, "_");
    const dbName = new URL(bg.db.url).pathname.slice(1);
    await sql(dbName, `CREATE ROLE ${runtime} LOGIN`, `GRANT USAGE ON SCHEMA replayable TO ${runtime}`);
    onTestFinished(() =>
      sql("test", `DROP OWNED BY ${runtime} CASCADE`, `DROP ROLE IF EXISTS ${runtime}`).catch(
        () => undefined,
      ),
    );
    const url = new URL(bg.db.url);
    url.username = runtime;
    const run = await bg.cli(["run", "--no-migrate", "--projection", bg.name], {
      DATABASE_URL: url.toString(),
    });
    expect(run.code).not.toBe(0);
    // Without the start-up check: a raw `permission denied for table projection_versions`.
    expect(run.stderr).toContain(`GRANT SELECT ON replayable.projection_versions TO ${runtime};`);
    expect(run.stderr).not.toContain("permission denied for table");
  }, 120_000);
});
