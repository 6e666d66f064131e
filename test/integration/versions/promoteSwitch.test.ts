/**
 * The switch of `promote` against real PostgreSQL with two real connections (docs/design.md
 * "Blue/green versions"): a reader mid-transaction keeps seeing one version on every view while
 * promote waits for it, then the next transaction sees the other version on every view; a promote
 * behind a reader longer than its lock_timeout fails with 55P03 and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { migrate } from "../../../src/db/migrate.js";
import { insertVersion, selectVersions } from "../../../src/sql/projectionVersions.js";
import { createVersionSchema } from "../../../src/versions/createVersion.js";
import { swapVersions } from "../../../src/versions/swapVersions.js";
import { tempFolder } from "../../helpers/versionedConfig.js";
import { createTestDatabase, uniqueName, waitFor, type TestDatabase } from "../../helpers/stack.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase(false);
});
afterAll(async () => {
  await db?.drop();
});

/** A migrations folder making tables `a` and `b` (unqualified) with one text column `v`. */
function twoTables(dir: string): string {
  const folder = join(dir, "migrations");
  mkdirSync(join(folder, "meta"), { recursive: true });
  writeFileSync(
    join(folder, "0000_ab.sql"),
    `CREATE TABLE "a" ("v" text NOT NULL);\n--> statement-breakpoint\nCREATE TABLE "b" ("v" text NOT NULL);\n`,
  );
  writeFileSync(
    join(folder, "meta", "_journal.json"),
    JSON.stringify({
      version: "7",
      dialect: "postgresql",
      entries: [{ idx: 0, version: "7", when: 1767225600000, tag: "0000_ab", breakpoints: true }],
    }),
  );
  return folder;
}

/** Version 1 live (rows "v1") and version 2 a shadow (rows "v2") of a new projection. */
async function twoVersions(): Promise<string> {
  const name = uniqueName("sw");
  const migrationsFolder = twoTables(tempFolder());
  await migrate(db.pool, [{ name, migrationsFolder, versioned: true }]);
  const client = await db.pool.connect();
  try {
    await createVersionSchema(client, name, 2, migrationsFolder);
    await insertVersion(client, {
      projection: name,
      version: 2,
      schemaName: `${name}_v2`,
      groupId: `${name}-v2`,
      state: "shadow",
    });
    for (const v of [1, 2])
      for (const t of ["a", "b"]) await client.query(`INSERT INTO "${name}_v${v}".${t} VALUES ('v${v}')`);
  } finally {
    client.release();
  }
  return name;
}

async function connect(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  return c;
}

const read = async (c: pg.ClientBase, name: string, table: string) =>
  (await c.query<{ v: string }>(`SELECT v FROM "${name}".${table}`)).rows.map((r) => r.v);

/** True when `pid` waits for a lock (pg_stat_activity). */
async function waitsForLock(observer: pg.ClientBase, pid: number): Promise<true | undefined> {
  const r = await observer.query<{ w: string | null }>(
    "SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1",
    [pid],
  );
  return r.rows[0]?.w === "Lock" ? true : undefined;
}

describe("promote's switch of the views", () => {
  it("waits for a reader mid-transaction, which sees version 1 on every view; the next transaction sees version 2 on every view", async () => {
    const name = await twoVersions();
    const reader = await connect();
    const promoter = await connect();
    const observer = await connect();
    try {
      const promoterPid = (await promoter.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!
        .pid;
      await reader.query("BEGIN");
      expect(await read(reader, name, "a")).toEqual(["v1"]);
      const swap = swapVersions(promoter, {
        projection: name,
        from: 1,
        to: 2,
        toState: "shadow",
        fromBecomes: "retired",
        lockTimeoutMs: 60_000,
        audit: { action: "promote", osUser: "test", host: "test", forced: false },
      });
      await waitFor(
        "promote to wait for the reader's lock",
        () => waitsForLock(observer, promoterPid),
        30_000,
        50,
      );
      // The reader goes on: both views still show version 1, the one it started with.
      expect(await read(reader, name, "b")).toEqual(["v1"]);
      expect(await read(reader, name, "a")).toEqual(["v1"]);
      expect((await selectVersions(observer, name)).map((r) => [r.version, r.state])).toEqual([
        [1, "live"],
        [2, "shadow"],
      ]);
      await reader.query("COMMIT");
      const { views } = await swap;
      expect(views).toEqual(["a", "b"]);
      await reader.query("BEGIN");
      expect(await read(reader, name, "a")).toEqual(["v2"]);
      expect(await read(reader, name, "b")).toEqual(["v2"]);
      await reader.query("COMMIT");
      expect((await selectVersions(observer, name)).map((r) => [r.version, r.state])).toEqual([
        [1, "retired"],
        [2, "live"],
      ]);
    } finally {
      await Promise.all([reader.end(), promoter.end(), observer.end()]);
    }
  });

  it("fails with lock_timeout (55P03) behind a reader that holds a view longer, changing nothing", async () => {
    const name = await twoVersions();
    const reader = await connect();
    const promoter = await connect();
    try {
      await reader.query("BEGIN");
      expect(await read(reader, name, "b")).toEqual(["v1"]);
      const failed = await swapVersions(promoter, {
        projection: name,
        from: 1,
        to: 2,
        toState: "shadow",
        fromBecomes: "retired",
        lockTimeoutMs: 300,
        audit: { action: "promote", osUser: "test", host: "test", forced: false },
      }).then(
        () => undefined,
        (error: unknown) => error as { code?: string },
      );
      expect(failed?.code).toBe("55P03");
      expect(await read(reader, name, "a")).toEqual(["v1"]);
      await reader.query("COMMIT");
      expect(await read(reader, name, "a")).toEqual(["v1"]);
      expect((await selectVersions(promoter, name)).map((r) => [r.version, r.state])).toEqual([
        [1, "live"],
        [2, "shadow"],
      ]);
      const audit = await promoter.query(
        "SELECT 1 FROM replayable.projection_version_audit WHERE projection = $1 AND action = 'promote'",
        [name],
      );
      expect(audit.rowCount).toBe(0);
    } finally {
      await Promise.all([reader.end(), promoter.end()]);
    }
  });
});
