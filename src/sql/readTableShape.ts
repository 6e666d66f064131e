/** What a table looks like in the system catalogs: its columns and the keys ON CONFLICT can use. */
import type pg from "pg";

/** One column of a table (PostgreSQL "pg_attribute"). */
export interface TableColumn {
  readonly name: string;
  /** The column's type as PostgreSQL spells it, with its modifier, e.g. `character varying(20)`. */
  readonly type: string;
  /** The base type without modifier, domains resolved, e.g. `character varying`, `citext`. */
  readonly baseType: string;
  readonly notNull: boolean;
  /** Has a DEFAULT or is an identity column. */
  readonly hasDefault: boolean;
  /** A generated column (GENERATED ALWAYS AS … STORED): it cannot be written. */
  readonly generated: boolean;
  /** False when the column's collation is nondeterministic (equal strings with other bytes). */
  readonly deterministic: boolean;
}

/** A table's shape; undefined from {@link readTableShape} when no such table exists. */
export interface TableShape {
  /** `r` table, `p` partitioned table, `v` view, … (pg_class.relkind). */
  readonly kind: string;
  readonly columns: readonly TableColumn[];
  /**
   * The column lists of its primary key and unique indexes that ON CONFLICT can infer as arbiters:
   * valid, immediate (not DEFERRABLE), not partial, no expressions ("INSERT", "ON CONFLICT Clause").
   */
  readonly uniqueKeys: readonly (readonly string[])[];
}

/**
 * Reads the shape of `schema`.`table` (exact names, no case folding).
 * @returns undefined when the relation does not exist (`schemaExists` tells whether its schema does).
 */
export async function readTableShape(
  client: pg.ClientBase,
  schema: string,
  table: string,
): Promise<{ shape: TableShape | undefined; schemaExists: boolean }> {
  const rel = await client.query<{ oid: number; relkind: string; schema_exists: boolean }>(
    `SELECT c.oid, c.relkind, true AS schema_exists
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2
     UNION ALL
     SELECT NULL, NULL, EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)
      WHERE NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = $1 AND c.relname = $2)`,
    [schema, table],
  );
  const row = rel.rows[0]!;
  if (row.oid === null) return { shape: undefined, schemaExists: row.schema_exists };
  return {
    schemaExists: true,
    shape: {
      kind: row.relkind,
      columns: await readColumns(client, row.oid),
      uniqueKeys: await readUniqueKeys(client, row.oid),
    },
  };
}

/** The table's columns in order (pg_attribute), without dropped and system columns. */
async function readColumns(client: pg.ClientBase, oid: number): Promise<TableColumn[]> {
  const columns = await client.query<{
    name: string;
    type: string;
    base_type: string;
    not_null: boolean;
    has_default: boolean;
    generated: boolean;
    deterministic: boolean;
  }>(
    `SELECT a.attname::text AS name,
            format_type(a.atttypid, a.atttypmod) AS type,
            format_type(base.oid, NULL) AS base_type,
            a.attnotnull AS not_null,
            (a.atthasdef OR a.attidentity <> '') AS has_default,
            a.attgenerated <> '' AS generated,
            coalesce(co.collisdeterministic, true) AS deterministic
       FROM pg_attribute a
       -- A domain's base type, through domains over domains (typbasetype names the next one down).
       CROSS JOIN LATERAL (
         WITH RECURSIVE chain(oid) AS (
           SELECT a.atttypid
           UNION ALL
           SELECT t.typbasetype FROM chain c JOIN pg_type t ON t.oid = c.oid WHERE t.typtype = 'd'
         )
         SELECT c.oid FROM chain c JOIN pg_type t ON t.oid = c.oid WHERE t.typtype <> 'd'
       ) AS base
       LEFT JOIN pg_collation co ON co.oid = a.attcollation
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [oid],
  );
  return columns.rows.map((c) => ({
    name: c.name,
    type: c.type,
    baseType: c.base_type,
    notNull: c.not_null,
    hasDefault: c.has_default,
    generated: c.generated,
    deterministic: c.deterministic,
  }));
}

/** The column lists of the unique indexes ON CONFLICT can use, the primary key first (pg_index). */
async function readUniqueKeys(client: pg.ClientBase, oid: number): Promise<string[][]> {
  const keys = await client.query<{ columns: string[] }>(
    `SELECT array_agg(a.attname::text ORDER BY k.ord) AS columns
       FROM pg_index i
       CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
      WHERE i.indrelid = $1 AND i.indisunique AND i.indimmediate AND i.indisvalid
        AND i.indpred IS NULL AND i.indexprs IS NULL AND k.ord <= i.indnkeyatts
      GROUP BY i.indexrelid
      ORDER BY bool_or(i.indisprimary) DESC, i.indexrelid`,
    [oid],
  );
  return keys.rows.map((k) => k.columns);
}
