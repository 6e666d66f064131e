/** What `drop-version` would delete, counted without changing anything (its dry run). */
import pg from "pg";

const q = (name: string) => pg.escapeIdentifier(name);

/** One table's row count; `rows` is a decimal string (count(*) is a bigint). */
export interface TableRowCount {
  readonly table: string;
  readonly rows: string;
}

/** The row count of each of `tables` in `schema`, in the order given. */
export async function tableRowCounts(
  db: pg.Pool | pg.ClientBase,
  schema: string,
  tables: readonly string[],
): Promise<TableRowCount[]> {
  const counts: TableRowCount[] = [];
  for (const table of tables) {
    const r = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${q(schema)}.${q(table)}`);
    counts.push({ table, rows: r.rows[0]?.n ?? "0" });
  }
  return counts;
}

/**
 * The dedupe state stored under `key` (a version's `<name>@v<N>`) that `deleteDedupeState` would
 * delete: checkpoints, event ids and dead letters, as decimal strings.
 */
export async function countDedupeState(
  db: pg.Pool | pg.ClientBase,
  key: string,
): Promise<{ checkpoints: string; eventIds: string; deadLetters: string }> {
  const r = await db.query<{ checkpoints: string; eventIds: string; deadLetters: string }>(
    `SELECT (SELECT count(*) FROM replayable.checkpoints WHERE projection = $1)::text AS checkpoints,
            (SELECT count(*) FROM replayable.processed_events WHERE projection = $1)::text AS "eventIds",
            (SELECT count(*) FROM replayable.dead_letters WHERE projection = $1)::text AS "deadLetters"`,
    [key],
  );
  return r.rows[0] ?? { checkpoints: "0", eventIds: "0", deadLetters: "0" };
}
