/**
 * The shipped github projection is versioned (docs/design.md "Blue/green versions"): `migrate`
 * creates version 1 (schema github_v1, views in schema github), gives it the group `--group`
 * names, and refuses, changing nothing, a database that still holds the github tables of the
 * non-versioned layout released before (drizzle/github/), which `--convert-to-versioned` keeps as
 * version 1.
 */
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { migrate } from "../../../src/db/migrate.js";
import { runCli } from "../../helpers/process.js";
import { createTestDatabase, uniqueName } from "../../helpers/stack.js";

describe("the versioned github projection", () => {
  it("migrate refuses a database holding the non-versioned github tables, naming them and the fix; nothing changed", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    // The layout of the releases before: drizzle/github/ applied as a plain projection's migrations.
    await migrate(db.pool, [{ name: "github", migrationsFolder: join("drizzle", "github") }]);
    await db.pool.query(
      "INSERT INTO github.github_repo_activity (repo, event_type, events) VALUES ('o/r', 'PushEvent', 3)",
    );

    const migrated = await runCli(["migrate", "--projection", "github", "--database-url", db.url]);
    expect(migrated.code).toBe(1);
    expect(migrated.stderr).toContain(
      "projection github is versioned (blue/green), but schema github holds the tables github.github_actor_pushes, github.github_repo_activity",
    );
    expect(migrated.stderr).toContain("replayable migrate --convert-to-versioned");
    expect(migrated.stderr).toContain('ALTER SCHEMA "github" RENAME TO "github_unversioned"');
    expect(migrated.stderr).toContain(
      'DROP TABLE "github"."github_actor_pushes", "github"."github_repo_activity"',
    );
    // run migrates first: the same refusal.
    const run = await runCli([
      "run",
      "--projection",
      "github",
      "--topic",
      uniqueName("t"),
      "--database-url",
      db.url,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("schema github holds the tables github.github_actor_pushes");

    const versions = await db.pool.query("SELECT 1 FROM replayable.projection_versions");
    expect(versions.rowCount).toBe(0);
    const schemas = await db.pool.query("SELECT 1 FROM pg_namespace WHERE nspname = 'github_v1'");
    expect(schemas.rowCount).toBe(0);
    const kept = await db.pool.query<{ events: string }>("SELECT events FROM github.github_repo_activity");
    expect(kept.rows).toEqual([{ events: "3" }]);

    // The fix the message gives, then migrate creates version 1.
    await db.pool.query('ALTER SCHEMA "github" RENAME TO "github_unversioned"');
    const again = await runCli(["migrate", "--projection", "github", "--database-url", db.url]);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    const views = await db.pool.query<{ viewname: string }>(
      "SELECT viewname FROM pg_views WHERE schemaname = 'github' ORDER BY 1",
    );
    expect(views.rows.map((r) => r.viewname)).toEqual(["github_actor_pushes", "github_repo_activity"]);
  });

  it("migrate --convert-to-versioned keeps the non-versioned github tables, their rows and dedupe state as version 1", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    await migrate(db.pool, [{ name: "github", migrationsFolder: join("drizzle", "github") }]);
    await db.pool.query(
      "INSERT INTO github.github_repo_activity (repo, event_type, events) VALUES ('o/r', 'PushEvent', 3)",
    );
    await db.pool.query(
      "INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset) VALUES ('github', 'events', 0, 41)",
    );
    const converted = await runCli([
      "migrate",
      "--projection",
      "github",
      "--convert-to-versioned",
      "--database-url",
      db.url,
    ]);
    expect(converted.stderr).toBe("");
    expect(converted.code).toBe(0);
    expect(converted.stdout).toContain(
      "converted github to versioned in place: version 1 (schema github_v1) is live with consumer group github; views github.github_actor_pushes, github.github_repo_activity; engine rows re-keyed to github@v1: checkpoints 1, processed_events 0, dead_letters 0, rebuilds 0, projection_topics 0",
    );
    const kept = await db.pool.query<{ events: string }>("SELECT events FROM github.github_repo_activity");
    expect(kept.rows).toEqual([{ events: "3" }]);
    const checkpoints = await db.pool.query(
      "SELECT projection, next_offset::text AS next FROM replayable.checkpoints ORDER BY 1",
    );
    expect(checkpoints.rows).toEqual([{ projection: "github@v1", next: "41" }]);
    const versions = await db.pool.query(
      "SELECT version, schema_name, group_id, state FROM replayable.projection_versions WHERE projection = 'github'",
    );
    expect(versions.rows).toEqual([
      { version: 1, schema_name: "github_v1", group_id: "github", state: "live" },
    ]);
    // Done once: a second migrate with the flag finds a version and changes nothing.
    const again = await runCli([
      "migrate",
      "--projection",
      "github",
      "--convert-to-versioned",
      "--database-url",
      db.url,
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain("converted");
  });

  it("migrate --group gives version 1 the consumer group <group>-v1", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const group = uniqueName("g");
    const migrated = await runCli([
      "migrate",
      "--projection",
      "github",
      "--group",
      group,
      "--database-url",
      db.url,
    ]);
    expect(migrated.stderr).toBe("");
    expect(migrated.code).toBe(0);
    const versions = await db.pool.query(
      "SELECT version, schema_name, group_id, state FROM replayable.projection_versions WHERE projection = 'github'",
    );
    expect(versions.rows).toEqual([
      { version: 1, schema_name: "github_v1", group_id: `${group}-v1`, state: "live" },
    ]);
  });
});
