/** Whether schema-qualified tables exist, by `to_regclass` (PostgreSQL "Object Identifier Types"). */
import type pg from "pg";

/**
 * The tables of `tables` (schema-qualified, e.g. `orders.order_totals`, or unqualified for the
 * search path) that do not exist as a table, view or materialized view, in the order given.
 */
export async function missingTables(
  client: pg.Pool | pg.ClientBase,
  tables: readonly string[],
): Promise<string[]> {
  if (tables.length === 0) return [];
  const result = await client.query<{ name: string; found: boolean }>(
    `SELECT t.name, to_regclass(t.name) IS NOT NULL AS found FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n) ORDER BY t.n`,
    [tables],
  );
  return result.rows.filter((r) => !r.found).map((r) => r.name);
}
