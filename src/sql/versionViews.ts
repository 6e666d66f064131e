/**
 * The stable schema's views over a version's tables, and a version's schema itself
 * (docs/design.md "Blue/green versions"). Call the view functions inside one transaction: DDL is
 * transactional, and `DROP VIEW` takes an ACCESS EXCLUSIVE lock on the view (PostgreSQL "Explicit
 * Locking"), held to COMMIT, which waits for every reader holding the view's ACCESS SHARE lock.
 */
import pg from "pg";

const q = (name: string) => pg.escapeIdentifier(name);

/** The tables (ordinary and partitioned) of `schema`, by name. */
export async function schemaTables(db: pg.Pool | pg.ClientBase, schema: string): Promise<string[]> {
  const result = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname COLLATE "C"`,
    [schema],
  );
  return result.rows.map((r) => r.name);
}

/** The views of `schema`, by name. */
export async function schemaViews(db: pg.Pool | pg.ClientBase, schema: string): Promise<string[]> {
  const result = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind = 'v' ORDER BY c.relname COLLATE "C"`,
    [schema],
  );
  return result.rows.map((r) => r.name);
}

/** True when `schema` exists. */
export async function schemaExists(db: pg.Pool | pg.ClientBase, schema: string): Promise<boolean> {
  const result = await db.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  return result.rowCount === 1;
}

/**
 * Points the views of `stable` at the tables of `target`: drops the views named in `dropViews`
 * (in name order: every promote locks them in the same order), then creates `stable.t AS SELECT *
 * FROM target.t` for every table of `target`. A view of the user's that depends on one of them
 * makes the DROP fail (no CASCADE): the transaction is rolled back and nothing changes.
 * @returns the views created.
 */
export async function pointViews(
  client: pg.ClientBase,
  stable: string,
  target: string,
  dropViews: readonly string[],
): Promise<string[]> {
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${q(stable)}`);
  // The readers' grants on a view stay with its name: a view made again gets them again.
  const kept = new Map<string, Grant[]>();
  for (const view of [...dropViews].sort()) {
    kept.set(view, await relationGrants(client, stable, view));
    await client.query(`DROP VIEW IF EXISTS ${q(stable)}.${q(view)}`);
  }
  const tables = await schemaTables(client, target);
  for (const table of tables) {
    await client.query(`CREATE VIEW ${q(stable)}.${q(table)} AS SELECT * FROM ${q(target)}.${q(table)}`);
    await grant(client, `${q(stable)}.${q(table)}`, kept.get(table) ?? []);
  }
  return tables;
}

/** One privilege of an ACL: `grantee` as SQL (a quoted role name, or PUBLIC). */
export interface Grant {
  readonly grantee: string;
  readonly privilege: string;
}

/** The privileges granted on relation `schema.name` (PostgreSQL's aclexplode of its ACL). */
export async function relationGrants(client: pg.ClientBase, schema: string, name: string): Promise<Grant[]> {
  const result = await client.query<Grant>(
    `SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS grantee, a.privilege_type AS privilege
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
      WHERE n.nspname = $1 AND c.relname = $2 AND a.grantee <> c.relowner`,
    [schema, name],
  );
  return result.rows;
}

/** The privileges granted on schema `schema`, but its owner's. */
export async function schemaGrants(client: pg.ClientBase, schema: string): Promise<Grant[]> {
  const result = await client.query<Grant>(
    `SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS grantee, a.privilege_type AS privilege
       FROM pg_namespace n CROSS JOIN LATERAL aclexplode(n.nspacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
      WHERE n.nspname = $1 AND a.grantee <> n.nspowner`,
    [schema],
  );
  return result.rows;
}

/** Grants each of `grants` on `object` (SQL: `schema.name`, or `SCHEMA name`). */
export async function grant(client: pg.ClientBase, object: string, grants: readonly Grant[]): Promise<void> {
  for (const g of grants) await client.query(`GRANT ${g.privilege} ON ${object} TO ${g.grantee}`);
}

/**
 * Drops a version's schema with every table in it (`DROP SCHEMA … CASCADE`) and its migrations
 * table `replayable.<migrationsTable>`.
 */
export async function dropVersionSchema(
  client: pg.ClientBase,
  schema: string,
  migrationsTable: string,
): Promise<void> {
  await client.query(`DROP SCHEMA IF EXISTS ${q(schema)} CASCADE`);
  await client.query(`DROP TABLE IF EXISTS replayable.${q(migrationsTable)}`);
}

/**
 * Deletes the dedupe state stored under `key` (a version's `<name>@v<N>`): its checkpoints, event
 * ids and dead letters (their bytes belong to that version's state). The rebuild audit rows stay.
 * @returns the rows deleted per table, decimal strings.
 */
export async function deleteDedupeState(
  client: pg.ClientBase,
  key: string,
): Promise<{ checkpoints: string; eventIds: string; deadLetters: string }> {
  const del = async (table: string) =>
    String(
      (await client.query(`DELETE FROM replayable.${table} WHERE projection = $1`, [key])).rowCount ?? 0,
    );
  return {
    checkpoints: await del("checkpoints"),
    eventIds: await del("processed_events"),
    deadLetters: await del("dead_letters"),
  };
}
