/**
 * A database without replayable's schema (never migrated, or migrated to another database): one
 * error that names the fix, `replayable migrate`, instead of PostgreSQL's
 * `relation "replayable.checkpoints" does not exist` in the middle of a command.
 */
import { redactUrl } from "../config.js";
import { ReplayableError, errorMessage, sqlState } from "../errors.js";

/** The engine's tables every command but `init`, `migrate` and `produce` reads (drizzle/engine). */
export const ENGINE_TABLES: readonly string[] = [
  "replayable.checkpoints",
  "replayable.processed_events",
  "replayable.dead_letters",
  "replayable.rebuilds",
  "replayable.projection_topics",
];

/**
 * The NOT_MIGRATED error for a database at `databaseUrl` (shown without its password) that lacks
 * `missing`, replayable's own tables.
 */
export function notMigratedError(
  databaseUrl: string | undefined,
  missing: readonly string[],
): ReplayableError {
  const where = databaseUrl === undefined ? "the database" : `the database at ${redactUrl(databaseUrl)}`;
  return new ReplayableError(
    "NOT_MIGRATED",
    `${where} has no replayable schema (${missing.join(", ")} ${missing.length === 1 ? "does" : "do"} not exist): run \`replayable migrate\` first (with the same DATABASE_URL, --database-url or config file databaseUrl), which creates replayable's tables and then your projections'`,
    { context: { missing } },
  );
}

/**
 * `error` as {@link notMigratedError} when it is PostgreSQL's 42P01 undefined_table on one of
 * replayable's relations (`replayable.*`), anywhere in its cause chain; undefined otherwise (a
 * projection's own missing table is the projection's problem, left as it is).
 */
export function explainNotMigrated(error: unknown): ReplayableError | undefined {
  if (error instanceof ReplayableError && error.code === "NOT_MIGRATED") return error;
  if (sqlState(error) !== "42P01") return undefined;
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const relation = /relation "(replayable\.[^"]+)" does not exist/.exec(errorMessage(e))?.[1];
    if (relation !== undefined) {
      const explained = notMigratedError(undefined, [relation]);
      return new ReplayableError(explained.code, explained.message, {
        cause: error,
        context: explained.context,
      });
    }
  }
  return undefined;
}
