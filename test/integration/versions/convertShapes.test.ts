/**
 * What `migrate --convert-to-versioned` compares and keeps (src/versions/convertToVersioned.ts),
 * against the real PostgreSQL, from the break-it review of issue 28: a foreign key between the
 * projection's tables, a partitioned table with indexes, identity columns and defaults convert when
 * the versioned migrations make them alike; a different default is refused; a view or function in
 * the schema is refused, changing nothing; readers keep their grants on the schema and the tables'
 * views, and a promote's new views keep the grants of the views they replace.
 */
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../../src/db/migrate.js";
import { pointViews } from "../../../src/sql/versionViews.js";
import { writeOneMigration } from "../../helpers/migrationFolder.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";
import { tempFolder } from "../../helpers/versionedConfig.js";

let db: TestDatabase;
const reader = uniqueName("reader");
beforeAll(async () => {
  db = await createTestDatabase(false);
  await db.pool.query(`CREATE ROLE ${reader} LOGIN`);
});
afterAll(async () => {
  await db?.drop();
  await db?.pool.query(`DROP ROLE IF EXISTS ${reader}`).catch(() => undefined);
});

/** The tables of a projection, written with `s` as the schema prefix (`"p".` or empty). */
const TABLES = (s: string, centsDefault = "0") => `
CREATE TABLE ${s}"shops" ("shop" text PRIMARY KEY, "id" bigint GENERATED ALWAYS AS IDENTITY, "cents" bigint NOT NULL DEFAULT ${centsDefault});
CREATE TABLE ${s}"orders" ("shop" text NOT NULL REFERENCES ${s}"shops" ("shop"), "id" bigint NOT NULL, "sale_id" text NOT NULL, PRIMARY KEY ("shop", "id")) PARTITION BY LIST ("shop");
CREATE TABLE ${s}"orders_rest" PARTITION OF ${s}"orders" DEFAULT;
CREATE INDEX "orders_sale" ON ${s}"orders" ("sale_id");
`;

/** A plain projection's schema made by hand (as its plain migrations did), with rows. */
async function plainProjection(name: string): Promise<void> {
  await db.pool.query(`CREATE SCHEMA "${name}"; ${TABLES(`"${name}".`)}`);
  await db.pool.query(`INSERT INTO "${name}".shops (shop, cents) VALUES ('s1', 5)`);
  await db.pool.query(`INSERT INTO "${name}".orders VALUES ('s1', 1, 'sale-1')`);
}

/** Converts `name` with versioned migrations of `sql`; the error when refused. */
async function convert(name: string, sql: string): Promise<unknown> {
  const folder = join(tempFolder(), "migrations");
  writeOneMigration(
    folder,
    "tables",
    sql
      .split(";\n")
      .filter((t) => t.trim() !== "")
      .join(";\n--> statement-breakpoint\n"),
  );
  return migrate(db.pool, [{ name, migrationsFolder: folder, versioned: true }], {
    convertToVersioned: true,
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

async function asReader<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const url = new URL(db.url);
  url.username = reader;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function versions(name: string): Promise<number> {
  const r = await db.pool.query("SELECT 1 FROM replayable.projection_versions WHERE projection = $1", [name]);
  return r.rowCount ?? 0;
}

describe("converting a plain projection in place", () => {
  it("keeps a foreign key, a partitioned table with indexes, identity and defaults, and the readers' grants", async () => {
    const name = uniqueName("shapes");
    await plainProjection(name);
    await db.pool.query(`GRANT USAGE ON SCHEMA "${name}" TO ${reader}`);
    await db.pool.query(`GRANT SELECT ON "${name}".shops, "${name}".orders TO ${reader}`);
    await migrate(db.pool); // replayable's own tables
    expect(await convert(name, TABLES(""))).toBeUndefined();
    expect(await versions(name)).toBe(1);
    const seen = await asReader(async (c) => ({
      shops: (await c.query(`SELECT shop, cents::text FROM "${name}".shops`)).rows,
      orders: (await c.query(`SELECT sale_id FROM "${name}".orders`)).rows,
    }));
    expect(seen).toEqual({ shops: [{ shop: "s1", cents: "5" }], orders: [{ sale_id: "sale-1" }] });

    // A promote's new views keep the grants of those they replace.
    await db.pool.query(`CREATE SCHEMA "${name}_v2"; ${TABLES(`"${name}_v2".`)}`);
    await db.pool.query(`INSERT INTO "${name}_v2".shops (shop, cents) VALUES ('s2', 7)`);
    await db.pool.query(`GRANT USAGE ON SCHEMA "${name}_v2" TO ${reader}`);
    await db.pool.query(`GRANT SELECT ON "${name}_v2".shops, "${name}_v2".orders TO ${reader}`);
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await pointViews(client, name, `${name}_v2`, ["orders", "orders_rest", "shops"]);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const after = await asReader(
      async (c) => (await c.query<{ shop: string }>(`SELECT shop FROM "${name}".shops`)).rows,
    );
    expect(after).toEqual([{ shop: "s2" }]);
  });

  it("refuses another default, naming it, and changes nothing", async () => {
    const name = uniqueName("shapes");
    await plainProjection(name);
    await migrate(db.pool);
    const error = await convert(name, TABLES("", "1"));
    expect(String(error)).toContain(
      "table shops: columns (shop text NOT NULL, id bigint NOT NULL GENERATED ALWAYS AS IDENTITY, cents bigint NOT NULL DEFAULT 0) exist, the migrations make (shop text NOT NULL, id bigint NOT NULL GENERATED ALWAYS AS IDENTITY, cents bigint NOT NULL DEFAULT 1)",
    );
    expect(await versions(name)).toBe(0);
    const schemas = await db.pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [`${name}_v1`]);
    expect(schemas.rowCount).toBe(0);
  });

  it("refuses a schema holding a view or a function, naming them, and changes nothing", async () => {
    const name = uniqueName("shapes");
    await plainProjection(name);
    await db.pool.query(`CREATE VIEW "${name}".big AS SELECT * FROM "${name}".shops WHERE cents > 1`);
    await db.pool.query(
      `CREATE FUNCTION "${name}".total() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'`,
    );
    await migrate(db.pool);
    const error = await convert(name, TABLES(""));
    expect(String(error)).toContain(
      `schema ${name} holds function total(), view big, which would move into ${name}_v1 with the tables`,
    );
    expect(await versions(name)).toBe(0);
    const kept = await db.pool.query(`SELECT shop FROM "${name}".big`);
    expect(kept.rows).toEqual([{ shop: "s1" }]);
  });
});
