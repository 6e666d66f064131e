/**
 * A plain projection made versioned in place (docs/design.md "Blue/green versions", "Converting a
 * plain projection"): `migrate --convert-to-versioned`. The projection's tables, in schema `P`
 * since it was plain, become version 1's (schema `P_v1`) without copying a row or re-reading the
 * log, its dedupe state moves to version 1's key `P@v1`, and version 1 keeps the plain projection's
 * consumer group, so its member goes on from the committed offsets where the plain member stopped.
 *
 * The versioned code's migrations are not run against the existing tables: they are run into an
 * empty schema `P_v1` first and the tables they make are compared with the existing ones (columns
 * with their types and NOT NULL, indexes and constraints); any difference refuses the conversion
 * and changes nothing. Then, in one transaction: the empty `P_v1` goes, schema `P` is renamed
 * `P_v1` (its tables, indexes, sequences and other objects move with it), a new schema `P` gets the
 * views, the dedupe rows are re-keyed, a rebuilds row of the plain key ends its members' generations,
 * and the registry and audit rows are written. The migrations
 * of `P_v1` stay recorded (`replayable."__drizzle_migrations_P@v1"`) as run by the check.
 */
import pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { ReplayableError } from "../errors.js";
import { projectionLock, tryAdvisoryLock, advisoryUnlock } from "../sql/advisoryLocks.js";
import { insertRebuild } from "../sql/insertRebuild.js";
import { CONVERTED_TO } from "../sql/lockCheckpoint.js";
import { insertVersion, insertVersionAudit, selectVersions } from "../sql/projectionVersions.js";
import {
  dropVersionSchema,
  grant,
  pointViews,
  relationGrants,
  schemaExists,
  schemaGrants,
  schemaTables,
} from "../sql/versionViews.js";
import { createVersionSchema, versionMigrationsTable } from "./createVersion.js";
import type { FirstVersionProjection } from "./firstVersion.js";
import { operator } from "./operator.js";
import { baseTable, versionKey, versionSchema } from "./versionNames.js";

const q = (id: string) => pg.escapeIdentifier(id);
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The engine's tables whose rows are keyed by projection: the dedupe state, rebuild epochs and the
 * topics its members consumed (which prune reads for unread re-sends).
 */
const KEYED_TABLES = [
  "checkpoints",
  "processed_events",
  "dead_letters",
  "rebuilds",
  "projection_topics",
] as const;

/** What a conversion did. */
export interface Conversion {
  readonly projection: string;
  /** Version 1's schema, `<name>_v1`, the former schema `<name>`. */
  readonly schema: string;
  /** The consumer group version 1 keeps: the plain projection's. */
  readonly groupId: string;
  /** The views made in schema `<name>`. */
  readonly views: readonly string[];
  /** Rows re-keyed from `<name>` to `<name>@v1`, per engine table, decimal strings. */
  readonly moved: Readonly<Record<(typeof KEYED_TABLES)[number], string>>;
}

/**
 * Makes the plain projection `projection` version 1 of itself, in place, when it has no version
 * and its schema holds its tables; returns undefined (changing nothing) when there is nothing to
 * convert. Call it holding the migration lock.
 * @param groupId the plain projection's consumer group, which version 1 keeps (default its name).
 * @throws ReplayableError DATABASE, changing nothing, when a member of the projection runs (it holds
 *   the projection's advisory lock), when `<name>_v1` exists with rows, or when the tables the
 *   versioned migrations make differ from the existing ones (each difference named).
 */
export async function convertToVersioned(
  client: pg.PoolClient,
  projection: FirstVersionProjection,
  groupId: string = projection.name,
): Promise<Conversion | undefined> {
  const name = projection.name;
  if ((await selectVersions(client, name)).length > 0) return undefined;
  const declared = projection.tables?.map(baseTable);
  const existing = (await schemaTables(client, name)).filter((t) => declared?.includes(t) ?? true);
  if (existing.length === 0) return undefined;
  const lock = projectionLock(name);
  if (!(await tryAdvisoryLock(client, lock, false)))
    throw new ReplayableError(
      "DATABASE",
      `projection ${name} cannot be converted while a member of it runs (it holds the advisory lock ${lock.name}): stop every \`replayable run\` of ${name}, then run \`replayable migrate --convert-to-versioned\` again; nothing of projection ${name} was changed`,
      { context: { projection: name } },
    );
  try {
    const schema = versionSchema(name, 1);
    const migrationsTable = versionMigrationsTable(name, 1);
    await refuseSchemaWithRows(client, name, schema);
    await refuseOtherObjects(client, name);
    await createVersionSchema(client, name, 1, projection.migrationsFolder);
    const differences = compareTables(await tableShapes(client, name), await tableShapes(client, schema));
    if (differences.length > 0) {
      await dropVersionSchema(client, schema, migrationsTable);
      throw new ReplayableError(
        "DATABASE",
        `projection ${name} cannot be converted to versioned in place: the tables its versioned migrations make (${projection.migrationsFolder ?? "no migrations"}) differ from those in schema ${name}:\n${differences.map((d) => `  ${d}`).join("\n")}\n` +
          `Make the migrations create the tables as they are (unqualified names), or add a migration for the change after converting (then rebuild --blue-green makes version 2 with it); nothing of projection ${name} was changed`,
        { context: { projection: name, differences } },
      );
    }
    return await withTransaction(client, () => moveIntoVersion(client, name, groupId));
  } finally {
    await advisoryUnlock(client, lock);
  }
}

/**
 * The conversion's changes, in the caller's transaction: schema `<name>` becomes `<name>_v1` (the
 * check's empty one dropped first), a new `<name>` gets the views and the readers' grants, the
 * dedupe rows are re-keyed to `<name>@v1`, a `replayable.rebuilds` row of the plain key marks it
 * converted (a new rebuild epoch, {@link CONVERTED_TO}), and the registry and audit rows are written.
 */
async function moveIntoVersion(client: pg.PoolClient, name: string, groupId: string): Promise<Conversion> {
  const schema = versionSchema(name, 1);
  await client.query(`DROP SCHEMA ${q(schema)} CASCADE`);
  await client.query(`ALTER SCHEMA ${q(name)} RENAME TO ${q(schema)}`);
  await client.query(`CREATE SCHEMA ${q(name)}`);
  const key = versionKey(name, 1);
  const moved = {} as Record<(typeof KEYED_TABLES)[number], string>;
  for (const table of KEYED_TABLES) {
    const result = await client.query(
      `UPDATE replayable.${table} SET projection = $1 WHERE projection = $2`,
      [key, name],
    );
    moved[table] = String(result.rowCount ?? 0);
  }
  // A new rebuild epoch of the plain key, after its rows were moved: a plain member whose lock
  // session was lost (so the lock above did not see it) and whose generation began before this has
  // its next transaction refused, and its next generation reads that the key was converted and stops
  // (docs/design.md "The rebuild epoch"); without it, it would go on applying under the plain key.
  await insertRebuild(client, {
    projection: name,
    groupId,
    ...operator(),
    forced: false,
    offsets: { [CONVERTED_TO]: key },
  });
  await insertVersion(client, {
    projection: name,
    version: 1,
    schemaName: schema,
    groupId,
    state: "live",
  });
  const views = await pointViews(client, name, schema, []);
  // Readers keep what they were granted: on the schema, and on each table as on its view.
  await grant(client, `SCHEMA ${q(name)}`, await schemaGrants(client, schema));
  for (const view of views) {
    const selects = (await relationGrants(client, schema, view)).filter((g) => g.privilege === "SELECT");
    await grant(client, `${q(name)}.${q(view)}`, selects);
  }
  await insertVersionAudit(client, {
    projection: name,
    action: "create",
    version: 1,
    ...operator(),
    forced: false,
    offsets: { views, convertedFrom: { schema: name, groupId, moved } },
  });
  return { projection: name, schema, groupId, views, moved };
}

/**
 * Refuses a schema `<name>_v1` that holds rows: one left by a conversion that stopped after its
 * check holds only the check's empty tables, which the conversion makes again.
 */
async function refuseSchemaWithRows(client: pg.ClientBase, name: string, schema: string): Promise<void> {
  if (!(await schemaExists(client, schema))) return;
  const full: string[] = [];
  for (const table of await schemaTables(client, schema)) {
    const rows = await client.query(`SELECT 1 FROM ${q(schema)}.${q(table)} LIMIT 1`);
    if (rows.rowCount !== 0) full.push(`${schema}.${table}`);
  }
  if (full.length > 0)
    throw new ReplayableError(
      "DATABASE",
      `projection ${name} cannot be converted to versioned in place: schema ${schema}, where version 1's tables go, already exists and holds rows (${full.join(", ")}); nothing was changed. Rename or drop it first`,
      { context: { projection: name, schema, tables: full } },
    );
}

/**
 * Refuses a schema `<name>` that holds views, materialized views or functions: they would move to
 * `<name>_v1` with the tables (readers of `<name>.<view>` would find nothing) and be dropped with
 * that version one day. The operator moves or drops them, and re-creates them over the views after.
 */
async function refuseOtherObjects(client: pg.ClientBase, name: string): Promise<void> {
  const result = await client.query<{ object: string }>(
    `SELECT CASE c.relkind WHEN 'v' THEN 'view ' ELSE 'materialized view ' END || c.relname AS object
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('v', 'm')
     UNION ALL
     SELECT CASE p.prokind WHEN 'p' THEN 'procedure ' ELSE 'function ' END || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1
      ORDER BY 1`,
    [name],
  );
  if (result.rows.length === 0) return;
  throw new ReplayableError(
    "DATABASE",
    `projection ${name} cannot be converted to versioned in place: schema ${name} holds ${result.rows.map((r) => r.object).join(", ")}, which would move into ${versionSchema(name, 1)} with the tables (and away from their readers); move or drop them, convert, then re-create them over the views of schema ${name}; nothing of projection ${name} was changed`,
    { context: { projection: name, objects: result.rows.map((r) => r.object) } },
  );
}

/** A table's shape: its columns in order and its indexes and constraints, schema-free. */
interface TableShape {
  readonly columns: readonly string[];
  readonly indexes: readonly string[];
  readonly constraints: readonly string[];
}

/** The shapes of the tables (ordinary and partitioned) of `schema`, by table name. */
async function tableShapes(client: pg.ClientBase, schema: string): Promise<Map<string, TableShape>> {
  const columns = await client.query<{ table: string; column: string }>(
    `SELECT c.relname AS table,
            a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
              || CASE a.attidentity WHEN 'a' THEN ' GENERATED ALWAYS AS IDENTITY' WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END
              || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') AS column
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
    [schema],
  );
  // An index's definition without its name and schema: drizzle-kit and hand-written migrations
  // may name the same index differently.
  const indexes = await client.query<{ table: string; def: string }>(
    `SELECT tablename AS table, regexp_replace(indexdef, '^CREATE (UNIQUE )?INDEX \\S+ ON (ONLY )?\\S+ ', 'CREATE \\1INDEX ON \\2t ') AS def
       FROM pg_indexes WHERE schemaname = $1 ORDER BY 1, 2`,
    [schema],
  );
  const constraints = await client.query<{ table: string; def: string }>(
    `SELECT c.relname AS table, pg_get_constraintdef(k.oid) AS def
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 ORDER BY 1, 2`,
    [schema],
  );
  const shapes = new Map<string, { columns: string[]; indexes: string[]; constraints: string[] }>();
  const shape = (table: string) => {
    let s = shapes.get(table);
    if (s === undefined) shapes.set(table, (s = { columns: [], indexes: [], constraints: [] }));
    return s;
  };
  // A foreign key, a default's sequence or function name objects with their schema when it is not
  // on the search_path, quoted only where it must be: both forms are taken out.
  const unqualified = (text: string) =>
    text
      .replaceAll(`${q(schema)}.`, "")
      .replace(new RegExp(`(?<![\\w$"])${escapeRegExp(schema)}\\.`, "g"), "");
  for (const r of columns.rows) shape(r.table).columns.push(unqualified(r.column));
  for (const r of indexes.rows) shape(r.table).indexes.push(unqualified(r.def));
  for (const r of constraints.rows) shape(r.table).constraints.push(unqualified(r.def));
  return shapes;
}

/**
 * The differences between the tables in `existing` (schema `<name>`) and those the versioned
 * migrations made (`made`), one line each; empty when they match.
 */
export function compareTables(existing: Map<string, TableShape>, made: Map<string, TableShape>): string[] {
  const out: string[] = [];
  const names = [...new Set([...existing.keys(), ...made.keys()])].sort();
  for (const table of names) {
    const a = existing.get(table);
    const b = made.get(table);
    if (a === undefined) {
      out.push(`table ${table}: made by the migrations, not in the existing schema`);
      continue;
    }
    if (b === undefined) {
      out.push(`table ${table}: in the existing schema, not made by the migrations`);
      continue;
    }
    if (a.columns.join(", ") !== b.columns.join(", "))
      out.push(
        `table ${table}: columns (${a.columns.join(", ")}) exist, the migrations make (${b.columns.join(", ")})`,
      );
    for (const [what, x, y] of [
      ["index", a.indexes, b.indexes],
      ["constraint", a.constraints, b.constraints],
    ] as const) {
      for (const d of x.filter((i) => !y.includes(i)))
        out.push(`table ${table}: ${what} ${d} exists, the migrations do not make it`);
      for (const d of y.filter((i) => !x.includes(i)))
        out.push(`table ${table}: the migrations make ${what} ${d}, which does not exist`);
    }
  }
  return out;
}
