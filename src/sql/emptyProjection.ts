/** Rebuild's database step: empty a projection's derived tables and its dedupe state (docs/design.md "Rebuild"). */
import pg from "pg";

/** Rows removed by {@link emptyProjection}. Counts are decimal strings (bigint). */
export interface EmptiedProjection {
  readonly checkpoints: string;
  readonly eventIds: string;
}

/**
 * Inside the caller's transaction: TRUNCATE the derived `tables` (one statement, so foreign keys
 * among them are fine; PostgreSQL "TRUNCATE" takes an ACCESS EXCLUSIVE lock until COMMIT), then
 * delete the projection's checkpoints and event ids. Dead letters are kept (they are history an
 * operator may have acted on).
 * @param tables schema-qualified names, e.g. `ledger.ledger_accounts`.
 */
export async function emptyProjection(
  client: pg.ClientBase,
  projection: string,
  tables: readonly string[],
): Promise<EmptiedProjection> {
  if (tables.length > 0) {
    const quoted = tables.map((t) =>
      t
        .split(".")
        .map((part) => pg.escapeIdentifier(part))
        .join("."),
    );
    await client.query(`TRUNCATE ${quoted.join(", ")}`);
  }
  const checkpoints = await client.query("DELETE FROM replayable.checkpoints WHERE projection = $1", [
    projection,
  ]);
  const eventIds = await client.query("DELETE FROM replayable.processed_events WHERE projection = $1", [
    projection,
  ]);
  return { checkpoints: String(checkpoints.rowCount ?? 0), eventIds: String(eventIds.rowCount ?? 0) };
}
