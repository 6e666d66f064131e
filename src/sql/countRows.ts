/** Row counts of a projection's tables and dedupe state, for the dry runs of `rebuild`. */
import pg from "pg";

/** Rows of each schema-qualified table in `tables`, as decimal strings. */
export async function countTableRows(
  client: pg.Pool | pg.ClientBase,
  tables: readonly string[],
): Promise<{ table: string; rows: string }[]> {
  const out: { table: string; rows: string }[] = [];
  for (const table of tables) {
    const quoted = table
      .split(".")
      .map((part) => pg.escapeIdentifier(part))
      .join(".");
    const result = await client.query<{ rows: string }>(`SELECT count(*)::text AS rows FROM ${quoted}`);
    out.push({ table, rows: result.rows[0]!.rows });
  }
  return out;
}

/** How many checkpoints and event ids `projection` has. */
export async function countDedupeState(
  client: pg.Pool | pg.ClientBase,
  projection: string,
): Promise<{ checkpoints: string; eventIds: string }> {
  const result = await client.query<{ checkpoints: string; event_ids: string }>(
    `SELECT (SELECT count(*) FROM replayable.checkpoints WHERE projection = $1)::text AS checkpoints,
            (SELECT count(*) FROM replayable.processed_events WHERE projection = $1)::text AS event_ids`,
    [projection],
  );
  const row = result.rows[0]!;
  return { checkpoints: row.checkpoints, eventIds: row.event_ids };
}
