/**
 * Creating a blue/green version's schema (docs/design.md "Blue/green versions"): the schema
 * `<name>_v<N>`, then the projection's migrations applied on a session whose `search_path` is that
 * schema, tracked in `replayable."__drizzle_migrations_<name>@v<N>"`. Both steps are idempotent, so
 * a creation that failed half way is finished by running it again.
 */
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate as drizzleMigrate } from "drizzle-orm/node-postgres/migrator";
import { ReplayableError, errorMessage } from "../errors.js";
import { versionKey, versionSchema, type VersionNumber } from "./versionNames.js";

/** The schema holding every migrations table (as src/db/migrate.ts). */
const MIGRATIONS_SCHEMA = "replayable";

/** The migrations table of a version, in schema `replayable`. */
export function versionMigrationsTable(name: string, version: VersionNumber): string {
  return `__drizzle_migrations_${versionKey(name, version)}`;
}

/**
 * Creates the schema of version `version` of projection `name` and applies its migrations there.
 * The session's `search_path` is reset afterwards, also on failure.
 * @throws ReplayableError DATABASE naming the folder when a migration fails (drizzle runs a folder's
 *   pending migrations in one transaction: the schema then stays, empty of them).
 */
export async function createVersionSchema(
  client: pg.PoolClient,
  name: string,
  version: VersionNumber,
  migrationsFolder: string | undefined,
): Promise<void> {
  const schema = pg.escapeIdentifier(versionSchema(name, version));
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  if (migrationsFolder === undefined) return;
  await client.query(`SET search_path TO ${schema}`);
  try {
    await drizzleMigrate(drizzle(client), {
      migrationsFolder,
      migrationsSchema: MIGRATIONS_SCHEMA,
      migrationsTable: versionMigrationsTable(name, version),
    });
  } catch (error) {
    throw new ReplayableError(
      "DATABASE",
      `migrations of projection ${name} version ${version} (${migrationsFolder}, in schema ${versionSchema(name, version)}) failed: ${errorMessage(error)}`,
      { cause: error, context: { folder: migrationsFolder, version } },
    );
  } finally {
    await client.query("RESET search_path");
  }
}
