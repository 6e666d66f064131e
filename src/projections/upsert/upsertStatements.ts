/**
 * The SQL of an upsert sink, built once from its declaration: identifiers quoted with
 * node-postgres's escapeIdentifier, types from the closed list of declarable types, values only
 * ever as parameters (one array per column, read with `unnest`).
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { mappedColumns } from "./upsertOperation.js";
import type { UpsertProjectionSpec } from "./upsertProjectionSpec.js";

/** A named statement: node-postgres prepares it once per connection. */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

/** The statements of one sink. Each takes one array parameter per column, in declaration order. */
export interface UpsertStatements {
  /**
   * Writes rows (parameters: the key parts, then the mapped columns): `INSERT … SELECT FROM unnest`,
   * with `ON CONFLICT (key) DO UPDATE SET` every mapped column in upsert mode (`DO NOTHING` when
   * every column is a key column), and no ON CONFLICT in insert mode.
   */
  readonly write: NamedStatement;
  /** Deletes the rows of keys (parameters: the key parts); undefined without a key. */
  readonly delete: NamedStatement | undefined;
}

/** `"schema"."table"` of a declaration's `table`. */
export function quotedTable(table: string): string {
  return table
    .split(".")
    .map((part) => pg.escapeIdentifier(part))
    .join(".");
}

/**
 * Builds the statements of `spec`.
 * @example
 * // key id (text), columns email (text), visits (bigint), upsert mode:
 * // INSERT INTO "crm"."customers" ("id", "email", "visits")
 * //   SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
 * //   ON CONFLICT ("id") DO UPDATE SET "email" = excluded."email", "visits" = excluded."visits"
 */
export function upsertStatements(spec: UpsertProjectionSpec): UpsertStatements {
  const table = quotedTable(spec.table);
  const keyColumns = spec.key.map((k) => pg.escapeIdentifier(k.column));
  const others = mappedColumns(spec);
  const columns = [...keyColumns, ...others.map((c) => pg.escapeIdentifier(c.column))];
  const types = [...spec.key.map((k) => k.type), ...others.map((c) => c.type)];
  const arrays = types.map((type, i) => `$${i + 1}::${type}[]`).join(", ");
  let write = `INSERT INTO ${table} (${columns.join(", ")}) SELECT * FROM unnest(${arrays})`;
  if (spec.mode === "upsert") {
    const set = columns
      .slice(keyColumns.length)
      .map((c) => `${c} = excluded.${c}`)
      .join(", ");
    write += ` ON CONFLICT (${keyColumns.join(", ")}) ${set === "" ? "DO NOTHING" : `DO UPDATE SET ${set}`}`;
  }
  let remove: string | undefined;
  if (spec.key.length > 0) {
    const keyArrays = spec.key.map((k, i) => `$${i + 1}::${k.type}[]`).join(", ");
    const aliases = spec.key.map((_, i) => `k${i}`);
    const match = spec.key
      .map((k, i) =>
        k.type === "text"
          ? `t.${keyColumns[i]} = ${storedText(`d.${aliases[i]}`, table, k.column)}`
          : `t.${keyColumns[i]} = d.${aliases[i]}`,
      )
      .join(" AND ");
    remove = `DELETE FROM ${table} AS t USING unnest(${keyArrays}) AS d(${aliases.join(", ")}) WHERE ${match}`;
  }
  return { write: named(write), delete: remove === undefined ? undefined : named(remove) };
}

/**
 * The SQL of the text a write stores for key text `key` in column `column` of `table`: cut to n
 * characters when the column is `varchar(n)`, the key is longer and its excess is only spaces, as
 * PostgreSQL does on assignment ("Character Types"); else the key as sent (a longer key with other
 * excess cannot have been written: its write fails). n is read from the catalog once per statement
 * (an initplan), so the comparison with the column still uses its index.
 */
function storedText(key: string, table: string, column: string): string {
  const limit = `(SELECT a.atttypmod - 4 FROM pg_attribute a WHERE a.attrelid = ${pg.escapeLiteral(table)}::regclass AND a.attname = ${pg.escapeLiteral(column)} AND a.atttypid = 'varchar'::regtype AND a.atttypmod > 4)`;
  return `(CASE WHEN length(${key}) > ${limit} AND rtrim(substr(${key}, ${limit} + 1), ' ') = '' THEN left(${key}, ${limit}) ELSE ${key} END)`;
}

/** Names a statement after its text, so two sinks never share a name for different SQL. */
function named(text: string): NamedStatement {
  return { name: `replayable_upsert_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`, text };
}
