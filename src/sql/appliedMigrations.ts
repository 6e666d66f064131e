/**
 * The migrations drizzle recorded in a migrations table of schema `replayable` (drizzle-orm's
 * PostgreSQL migrator: one row per applied migration, `hash` = sha256 of its `.sql` file,
 * `created_at` = the journal entry's `when`).
 */
import pg from "pg";

/** One applied migration as drizzle recorded it. */
export interface AppliedMigration {
  /** sha256 (hex) of the migration's `.sql` file as it was applied. */
  readonly hash: string;
  /** The journal entry's `when` (ms since the epoch), as a decimal string. */
  readonly createdAt: string;
}

/**
 * The rows of `replayable.<table>` in the order they were applied; none when the table does not
 * exist (nothing was ever applied there).
 */
export async function selectAppliedMigrations(
  db: pg.Pool | pg.ClientBase,
  schema: string,
  table: string,
): Promise<AppliedMigration[]> {
  const qualified = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
  const exists = await db.query<{ found: boolean }>("SELECT to_regclass($1) IS NOT NULL AS found", [
    qualified,
  ]);
  if (exists.rows[0]?.found !== true) return [];
  const result = await db.query<{ hash: string; created_at: string }>(
    `SELECT hash, created_at::text AS created_at FROM ${qualified} ORDER BY id`,
  );
  return result.rows.map((r) => ({ hash: r.hash, createdAt: r.created_at }));
}
