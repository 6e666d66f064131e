/**
 * Applies replayable's own migrations, then each named projection's, with drizzle's migrator.
 * Safe when several processes start at once: each takes the same session-level advisory lock
 * first, so one migrates and the others wait, then find nothing left to do.
 *
 * The folders (drizzle-kit's layout: `meta/_journal.json` and one `.sql` file per migration):
 * - `drizzle/engine/`: the engine's schema `replayable` (checkpoints, event ids, dead letters,
 *   rebuild audit), tracked in `replayable.__drizzle_migrations`.
 * - `drizzle/` itself: the chain released up to 0.1.x (0000-0003), which also created the example
 *   schemas `ledger` and `github`. Never edited; applied only to a database that already has
 *   `replayable.__drizzle_migrations` (one migrated by those releases), so that a database left
 *   at 0001 or 0002 finishes the old chain first. drizzle's migrator applies a migration only
 *   when its journal `when` is above the `created_at` of the last recorded one, and
 *   `drizzle/engine/0000` has the same `when` as the old 0003: a database migrated by the old
 *   chain skips it, and a new database that ran it skips the whole old chain.
 * - `drizzle/versions/`: the blue/green version registry and audit (src/db/versionsSchema.ts),
 *   tracked in `replayable."__drizzle_migrations@versions"`.
 * - a versioned projection's folder: applied to version 1's schema when it has no version
 *   (src/versions/firstVersion.ts), tracked in `replayable."__drizzle_migrations_<name>@v1"`.
 * - a projection's own folder (`defineProjection({ migrations })`, or `drizzle/ledger` for the
 *   ledger example), tracked in `replayable.__drizzle_migrations_<projection>`. The github example
 *   is versioned: `drizzle/github-versioned/` goes to its versions' schemas (above);
 *   `drizzle/github/`, its non-versioned layout of the releases before, is no longer applied.
 */
import { join } from "node:path";
import type pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate as drizzleMigrate } from "drizzle-orm/node-postgres/migrator";
import { ReplayableError, errorMessage } from "../errors.js";
import { packageRoot } from "../support/packageRoot.js";
import { advisoryLock, advisoryUnlock, MIGRATION_LOCK } from "../sql/advisoryLocks.js";
import { missingTables } from "../sql/tableExists.js";
import { convertToVersioned, type Conversion } from "../versions/convertToVersioned.js";
import { ensureFirstVersion, refuseFirstVersionBlocked } from "../versions/firstVersion.js";

/** The schema that holds every migrations table. */
export const MIGRATIONS_SCHEMA = "replayable";
/** The engine's migrations table (the same as the 0.1.x releases used). */
const ENGINE_TABLE = "__drizzle_migrations";
/**
 * The migrations table of the blue/green version tables (`drizzle/versions/`), a chain of its own;
 * `@` is never in a projection name, so no projection's table can be called so.
 */
const VERSIONS_TABLE = "__drizzle_migrations@versions";

/** A projection whose migrations {@link migrate} applies. */
export interface MigratingProjection {
  readonly name: string;
  /** Absolute path of a drizzle-kit migrations folder (with `meta/_journal.json`); none: nothing to apply. */
  readonly migrationsFolder?: string | undefined;
  /**
   * Blue/green versions (docs/design.md "Blue/green versions"): the migrations are applied to
   * version 1's schema `<name>_v1` when the projection has no version yet, and never to an
   * existing version (src/versions/firstVersion.ts).
   */
  readonly versioned?: boolean | undefined;
  /**
   * Its tables (`<name>.<table>`); for a versioned projection, the names version 1's views take,
   * checked to be free before it is created.
   */
  readonly tables?: readonly string[] | undefined;
}

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /**
   * The consumer group id version 1 of a versioned projection gets, as `<groupId>-v1` (the
   * command's `--group`); default: the projection's name. Ignored for existing versions.
   */
  readonly groupId?: string | undefined;
  /**
   * Runs after the plain projections' migrations and before any version is created (on the
   * migrating session): a check that throws stops `migrate` there, so a problem it finds (the CLI
   * checks that the plain projections' tables exist) leaves no new version behind.
   */
  readonly beforeVersions?: ((db: pg.ClientBase) => Promise<void>) | undefined;
  /**
   * A versioned projection without a version whose schema holds its tables from when it was plain
   * is converted in place (src/versions/convertToVersioned.ts): version 1 takes those tables, its
   * dedupe state and its consumer group (`groupId`, default the projection's name). Without it
   * such a projection is refused, nothing changed.
   */
  readonly convertToVersioned?: boolean | undefined;
  /** Told of each projection converted. */
  readonly onConverted?: ((conversion: Conversion) => void) | undefined;
}

/** The migrations table of projection `name` in schema `replayable`. */
export function projectionMigrationsTable(name: string): string {
  return `${ENGINE_TABLE}_${name}`;
}

/**
 * Runs every pending migration of the engine, then of each plain projection of `projections` in
 * order, then `options.beforeVersions`; then a versioned projection without a version gets version
 * 1 (src/versions/firstVersion.ts). Every versioned projection's stable schema is checked before
 * any projection's migration runs.
 * @throws ReplayableError DATABASE naming the folder of a failing migration (each folder's pending
 *   migrations run in one transaction, so a failing folder changes nothing), or a versioned
 *   projection whose stable schema holds tables of the names its views need (nothing of the
 *   projections changed then); whatever `beforeVersions` throws (no version created); the lock is
 *   released either way.
 * @example await migrate(pool, [{ name: "orders", migrationsFolder: "/app/migrations" }])
 */
export async function migrate(
  pool: pg.Pool,
  projections: readonly MigratingProjection[] = [],
  options: MigrateOptions = {},
): Promise<void> {
  const client = await pool.connect();
  try {
    await advisoryLock(client, MIGRATION_LOCK);
    try {
      await migrateLocked(client, projections, options);
    } finally {
      await advisoryUnlock(client, MIGRATION_LOCK);
    }
  } finally {
    client.release();
  }
}

/** {@link migrate}'s work, with the migration lock held on `client`. */
async function migrateLocked(
  client: pg.PoolClient,
  projections: readonly MigratingProjection[],
  options: MigrateOptions,
): Promise<void> {
  const root = join(packageRoot(), "drizzle");
  const run = migrationRunner(client);
  if ((await missingTables(client, [`${MIGRATIONS_SCHEMA}.${ENGINE_TABLE}`])).length === 0)
    await run(root, ENGINE_TABLE, "replayable (0.1.x chain)");
  await run(join(root, "engine"), ENGINE_TABLE, "replayable");
  await run(join(root, "versions"), VERSIONS_TABLE, "replayable (blue/green versions)");
  // Checks first, changes after: the versions' views need free names, the plain projections'
  // migrations may make tables other projections need, then versions are created last.
  const versioned = projections.filter((p) => p.versioned === true);
  if (options.convertToVersioned !== true)
    for (const projection of versioned) await refuseFirstVersionBlocked(client, projection);
  for (const projection of projections) {
    if (projection.versioned === true || projection.migrationsFolder === undefined) continue;
    await run(
      projection.migrationsFolder,
      projectionMigrationsTable(projection.name),
      `projection ${projection.name}`,
    );
  }
  await options.beforeVersions?.(client);
  for (const projection of versioned) {
    const conversion =
      options.convertToVersioned === true
        ? await convertToVersioned(client, projection, options.groupId)
        : undefined;
    if (conversion !== undefined) options.onConverted?.(conversion);
    else await ensureFirstVersion(client, projection, options.groupId);
  }
}

/**
 * Runs one folder's pending drizzle migrations on `client`, recorded in `table`.
 * @throws ReplayableError DATABASE naming `what` and the folder.
 */
function migrationRunner(
  client: pg.PoolClient,
): (folder: string, table: string, what: string) => Promise<void> {
  const db = drizzle(client);
  return async (folder, table, what) => {
    try {
      await drizzleMigrate(db, {
        migrationsFolder: folder,
        migrationsSchema: MIGRATIONS_SCHEMA,
        migrationsTable: table,
      });
    } catch (error) {
      throw new ReplayableError(
        "DATABASE",
        `migrations of ${what} (${folder}) failed: ${errorMessage(error)}`,
        {
          cause: error,
          context: { folder, table },
        },
      );
    }
  };
}
