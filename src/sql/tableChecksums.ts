/** Order-independent fingerprints of derived tables, to show a replay left them unchanged. */
import pg from "pg";

/**
 * Row count and an MD5 over the rows' text forms sorted: every column, so a value a projection
 * takes from the record (the ledger's `paid_at`, the record timestamp) counts too. Equal before and
 * after a replay or rebuild of the same log; two logs of the same events produced at different
 * times differ where such a column does.
 */
export interface TableChecksum {
  readonly table: string;
  readonly rows: string;
  readonly md5: string;
}

/** Checksums of each schema-qualified table in `tables` (e.g. `ledger.ledger_accounts`). */
export async function tableChecksums(
  client: pg.Pool | pg.ClientBase,
  tables: readonly string[],
): Promise<TableChecksum[]> {
  const out: TableChecksum[] = [];
  for (const table of tables) {
    const quoted = table
      .split(".")
      .map((part) => pg.escapeIdentifier(part))
      .join(".");
    const result = await client.query<{ rows: string; md5: string | null }>(
      `SELECT count(*)::text AS rows, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS md5 FROM ${quoted} t`,
    );
    const row = result.rows[0]!;
    out.push({ table, rows: row.rows, md5: row.md5 ?? "" });
  }
  return out;
}
