/**
 * Start-up validation of an upsert sink against its table: what can be known before any record is
 * read is a start-up error, every problem at once, each with the column or field and the fix.
 * What only a record can show (a bad field) is a dead letter instead (upsertOperation.ts).
 */
import pg from "pg";
import { errorMessage } from "../../errors.js";
import { readTableShape, type TableColumn, type TableShape } from "../../sql/readTableShape.js";
import { mappedColumns } from "./upsertOperation.js";
import type { SpecProblem, UpsertProjectionSpec } from "./upsertProjectionSpec.js";
import { quotedTable } from "./upsertStatements.js";

// Key column types whose equal values have one text (KEY_TYPES converted as fieldTypes.ts does).
const EXACT_KEY_COLUMNS: Record<string, readonly string[]> = {
  text: ["text", "character varying"],
  uuid: ["uuid", "text", "character varying"],
  smallint: ["smallint", "integer", "bigint", "numeric"],
  integer: ["smallint", "integer", "bigint", "numeric"],
  bigint: ["smallint", "integer", "bigint", "numeric"],
};

/**
 * Checks `spec` against its table and returns every problem (empty when none):
 * - the table exists and is a table (ON CONFLICT and DELETE need one, not a view);
 * - every key and mapped column exists and is not a generated column;
 * - the key columns are exactly a primary key or a unique constraint ON CONFLICT can use
 *   (not partial, not DEFERRABLE; PostgreSQL "INSERT", "ON CONFLICT Clause");
 * - each declared type has an assignment cast to its column's type, the cast an INSERT applies
 *   (probed with `EXPLAIN INSERT … SELECT NULL::<type>` in a savepoint; PostgreSQL "Type
 *   Conversion: Value Storage"); with deleteOnTombstone, each key part compares with its column;
 * - with deleteOnTombstone, each key column compares exactly as text does (no citext, no
 *   nondeterministic collation), which the batch ordering relies on (applyUpsertBatch.ts);
 * - no NOT NULL column without a default is left unmapped (every insert would fail).
 * Runs in one transaction on `db` and rolls it back; `db` must not be inside a transaction.
 * Report the problems together with the config's, as CONFIG_INVALID.
 * @throws the database error when the catalogs cannot be read (e.g. the connection failed).
 */
export async function validateUpsertProjection(
  spec: UpsertProjectionSpec,
  db: pg.Pool | pg.ClientBase,
): Promise<SpecProblem[]> {
  const client = db instanceof pg.Pool ? await db.connect() : db;
  try {
    await client.query("BEGIN");
    try {
      return await problemsOf(spec, client);
    } finally {
      await client.query("ROLLBACK");
    }
  } finally {
    if (db instanceof pg.Pool) (client as pg.PoolClient).release();
  }
}

async function problemsOf(spec: UpsertProjectionSpec, client: pg.ClientBase): Promise<SpecProblem[]> {
  const [schema, table] = spec.table.split(".") as [string, string];
  const { shape, schemaExists } = await readTableShape(client, schema, table);
  if (shape === undefined) {
    const fix = schemaExists
      ? `create it in a migration, or correct table (names are used exactly as written: quoted, case-sensitive)`
      : `schema ${JSON.stringify(schema)} does not exist either; create both in a migration, or correct table`;
    return [{ path: "table", message: `table ${spec.table} does not exist; ${fix}` }];
  }
  if (shape.kind !== "r" && shape.kind !== "p") {
    return [
      {
        path: "table",
        message: `${spec.table} is not a table (pg_class.relkind ${shape.kind}); name the table to write to`,
      },
    ];
  }
  const problems: SpecProblem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const byName = new Map(shape.columns.map((c) => [c.name, c]));
  const keyPath = (i: number) => (spec.key.length === 1 ? "key" : `key[${i}]`);
  const missing = (column: string) =>
    `column ${JSON.stringify(column)} does not exist in ${spec.table}; its columns are ${shape.columns.map((c) => c.name).join(", ")} (names are case-sensitive)`;

  const targets: Target[] = [
    ...spec.key.map((k, i) => ({ path: `${keyPath(i)}.column`, column: k.column, type: k.type, key: true })),
    ...mappedColumns(spec).map((c) => ({
      path: columnPath(c.column),
      column: c.column,
      type: c.type,
      key: false,
    })),
  ];
  for (const target of targets) {
    const column = byName.get(target.column);
    const problem =
      column === undefined ? missing(target.column) : await targetProblem(client, spec, target, column);
    if (problem !== undefined) add(target.path, problem);
  }
  const keyProblem = keyConstraintProblem(spec, shape, byName);
  if (keyProblem !== undefined) add("key", keyProblem);

  const written = new Set(targets.map((t) => t.column));
  for (const column of unfilled(shape, written)) {
    add(
      "columns",
      `column ${column.name} of ${spec.table} is NOT NULL without a default and no field fills it, so every insert would fail; map it in columns or give it a default`,
    );
  }
  return problems;
}

/** A column the sink writes: a key column or a mapped one, with the type the spec declares. */
interface Target {
  path: string;
  column: string;
  type: string;
  key: boolean;
}

/**
 * Why the sink cannot write `target` into `column` (generated, a type PostgreSQL does not assign,
 * or a key that cannot delete a row exactly), probed with EXPLAIN; undefined when it can.
 */
async function targetProblem(
  client: pg.ClientBase,
  spec: UpsertProjectionSpec,
  target: Target,
  column: TableColumn,
): Promise<string | undefined> {
  if (column.generated)
    return `column ${target.column} is a generated column, which PostgreSQL computes; remove it`;
  const rejected = await probe(
    client,
    `EXPLAIN INSERT INTO ${quotedTable(spec.table)} (${pg.escapeIdentifier(target.column)}) SELECT NULL::${target.type}`,
  );
  if (rejected !== undefined)
    return `declared type ${target.type} cannot be stored in column ${target.column} of type ${column.type} (${rejected}); declare a type PostgreSQL assigns to ${column.type}, or change the column`;
  const settingDependent = settingDependentProblem(target, column);
  if (settingDependent !== undefined) return settingDependent;
  if (!target.key || !spec.deleteOnTombstone) return undefined;
  const notComparable = await probe(
    client,
    `EXPLAIN DELETE FROM ${quotedTable(spec.table)} WHERE ${pg.escapeIdentifier(target.column)} = NULL::${target.type}`,
  );
  if (notComparable !== undefined)
    return `declared type ${target.type} cannot be compared with column ${target.column} of type ${column.type} to delete a row (${notComparable}); declare the column's type`;
  if (!exactKey(target.type, column))
    return `column ${target.column} of type ${column.type}${column.deterministic ? "" : " with a nondeterministic collation"} has equal values with different spellings, so a batch could apply a tombstone and a write of one key out of order; use a text, varchar, integer or uuid column with a deterministic collation, or set deleteOnTombstone: false`;
  return undefined;
}

/** The declarable type whose cast to a column of this type reads no time zone, where there is one. */
const ZONE_FREE_DECLARATION: Readonly<Record<string, string>> = {
  "timestamp with time zone": "timestamptz (an ISO-8601 date-time with Z or an offset)",
  "timestamp without time zone": "timestamp",
  date: "date",
  "time without time zone": "timestamp",
};

/**
 * The column base types each declared date/time type is stored into without reading a session
 * setting. PostgreSQL's other casts from them read one (PostgreSQL "Date/Time Types"): a value
 * without a time zone is local time, so `timestamp` or `date` into `timestamptz`, and `timestamptz`
 * into `timestamp`, `date`, `time` or `timetz` (whose offset is the session's), read TimeZone; into a
 * string type the value is printed, as DateStyle (and TimeZone) say.
 */
const SETTING_FREE_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  timestamptz: ["timestamp with time zone"],
  timestamp: ["timestamp without time zone", "date", "time without time zone"],
  date: ["date", "timestamp without time zone"],
};

/** The date/time column base types (the others a date/time type can be stored into are strings). */
const DATE_TIME_COLUMNS = [
  "timestamp with time zone",
  "timestamp without time zone",
  "date",
  "time without time zone",
  "time with time zone",
];

/**
 * Why declared `target.type` cannot be stored into `column` the same way under every session
 * setting ({@link SETTING_FREE_COLUMNS}): a rebuild under another setting would store other values.
 * Undefined when it can, or when the declared type is not a date/time type.
 */
function settingDependentProblem(target: Target, column: TableColumn): string | undefined {
  const free = SETTING_FREE_COLUMNS[target.type];
  if (free === undefined || free.includes(column.baseType)) return undefined;
  const into = `declared type ${target.type} into column ${target.column} of type ${column.type}`;
  const otherValues = "so a rebuild under another setting would store other values";
  if (!DATE_TIME_COLUMNS.includes(column.baseType)) {
    const settings = target.type === "timestamptz" ? "DateStyle and TimeZone decide" : "DateStyle decides";
    return `${into}: PostgreSQL prints the value, and the session's ${settings} the text stored, ${otherValues}; declare text (the field's text is stored as sent), or use a date/time column`;
  }
  const decides = column.baseType === "date" ? "day" : "time";
  const instead = ZONE_FREE_DECLARATION[column.baseType];
  return `${into}: the session's time zone (TimeZone) decides which ${decides} is stored, ${otherValues}; ${instead === undefined ? "change the column" : `declare ${instead}, or change the column`}`;
}

/**
 * Why the key columns are not the primary key or a unique constraint of the table (which
 * ON CONFLICT needs); undefined when they are, or when a key column is missing (reported already).
 */
function keyConstraintProblem(
  spec: UpsertProjectionSpec,
  shape: TableShape,
  byName: ReadonlyMap<string, TableColumn>,
): string | undefined {
  if (spec.key.length === 0 || !spec.key.every((k) => byName.has(k.column))) return undefined;
  const wanted = new Set(spec.key.map((k) => k.column));
  const matches = shape.uniqueKeys.some(
    (cols) => cols.length === wanted.size && cols.every((c) => wanted.has(c)),
  );
  if (matches) return undefined;
  const list = spec.key.map((k) => pg.escapeIdentifier(k.column)).join(", ");
  // readTableShape's uniqueKeys leave out partial indexes and DEFERRABLE constraints: say so.
  const existing =
    shape.uniqueKeys.length === 0
      ? "it has none ON CONFLICT can use: a partial unique index or a DEFERRABLE constraint does not count"
      : `its usable ones are ${shape.uniqueKeys.map((cols) => `(${cols.join(", ")})`).join(", ")}`;
  return `the key column${wanted.size > 1 ? "s" : ""} (${[...wanted].join(", ")}) ${wanted.size > 1 ? "are" : "is"} not the primary key or a unique constraint of ${spec.table} (${existing}), which ON CONFLICT and dedupe by key need; add one in a migration (ALTER TABLE ${quotedTable(spec.table)} ADD PRIMARY KEY (${list})), or change key`;
}

/** NOT NULL columns without a default that the sink does not write. */
function unfilled(shape: TableShape, written: ReadonlySet<string>): TableColumn[] {
  return shape.columns.filter((c) => c.notNull && !c.hasDefault && !c.generated && !written.has(c.name));
}

function exactKey(type: string, column: TableColumn): boolean {
  return (EXACT_KEY_COLUMNS[type] ?? []).includes(column.baseType) && column.deterministic;
}

function columnPath(column: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(column) ? `columns.${column}` : `columns[${JSON.stringify(column)}]`;
}

/**
 * Runs `sql` (an EXPLAIN: planned, never executed) in a savepoint.
 * @returns PostgreSQL's message when it is refused, undefined when it plans.
 */
async function probe(client: pg.ClientBase, sql: string): Promise<string | undefined> {
  await client.query("SAVEPOINT replayable_probe");
  try {
    await client.query(sql);
    await client.query("RELEASE SAVEPOINT replayable_probe");
    return undefined;
  } catch (error) {
    await client.query("ROLLBACK TO SAVEPOINT replayable_probe");
    return errorMessage(error);
  }
}
