/**
 * Checking that a version's schema has the migrations the code declares before the code runs as
 * its member (docs/design.md "Blue/green versions"): a version's migrations are applied once, when
 * it is created, and `migrate` never changes an existing version, so changed code must get a new
 * version instead of running against tables made for other code.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type pg from "pg";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { checkVersionedRunPrivileges } from "../db/privileges.js";
import { ReplayableError, errorMessage } from "../errors.js";
import { selectAppliedMigrations } from "../sql/appliedMigrations.js";
import { versionMigrationsTable } from "./createVersion.js";
import {
  describeApplied,
  migrationDrift,
  type DeclaredMigration,
  type MigrationDrift,
} from "./migrationDrift.js";
import type { VersionNumber } from "./versionNames.js";

/** The schema holding every migrations table (as src/db/migrate.ts). */
const MIGRATIONS_SCHEMA = "replayable";

/** What the check needs of a projection. */
export interface MigratedProjection {
  readonly name: string;
  /** Absolute path of its drizzle-kit migrations folder; undefined: it declares none. */
  readonly migrationsFolder?: string | undefined;
}

/**
 * The migrations `folder` declares (drizzle-kit's `meta/_journal.json`), in journal order, hashed
 * as drizzle-orm's migrator hashes them; none for no folder.
 * @throws ReplayableError CONFIG_INVALID naming the folder when its journal or a `.sql` file is
 *   missing or unreadable.
 */
export function declaredMigrations(folder: string | undefined): DeclaredMigration[] {
  if (folder === undefined) return [];
  const journalPath = join(folder, "meta", "_journal.json");
  try {
    if (!existsSync(journalPath)) throw new Error(`no ${journalPath}`);
    const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
    const files = readMigrationFiles({ migrationsFolder: folder });
    return files.map((file, i) => ({
      tag: journal.entries[i]?.tag ?? `#${i}`,
      when: String(file.folderMillis),
      hash: file.hash,
    }));
  } catch (error) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `migrations folder ${folder}: cannot read its migrations (${errorMessage(error)}); it must be a drizzle-kit folder with meta/_journal.json and one .sql file per entry`,
      { cause: error, context: { folder } },
    );
  }
}

/** How the migrations of version `version` of `projection` differ from the code's. */
export async function versionMigrationDrift(
  db: pg.Pool | pg.ClientBase,
  projection: MigratedProjection,
  version: VersionNumber,
): Promise<MigrationDrift> {
  const applied = await selectAppliedMigrations(
    db,
    MIGRATIONS_SCHEMA,
    versionMigrationsTable(projection.name, version),
  );
  return migrationDrift(declaredMigrations(projection.migrationsFolder), applied);
}

/**
 * What `run` (and `dead-letters retry --execute` into a version) checks before it applies a record
 * into version `version`: the grant to read the version's migrations table, then
 * {@link checkVersionMigrations} (docs/design.md "Blue/green versions").
 * @throws ReplayableError CONFIG_INVALID naming the GRANT for a missing privilege; as
 *   {@link checkVersionMigrations}.
 */
export async function checkCodeOfVersion(
  db: pg.Pool | pg.ClientBase,
  projection: MigratedProjection,
  version: VersionNumber,
): Promise<void> {
  await checkVersionedRunPrivileges(db, versionMigrationsTable(projection.name, version));
  await checkVersionMigrations(db, projection, version);
}

/**
 * Refuses to run the code as a member of version `version` when the version's schema lacks
 * migrations the code declares, or has migrations the code does not know; does nothing when equal.
 * @throws ReplayableError VERSION_MIGRATIONS_DIFFER (exit 2) naming the projection, the version,
 *   the migrations and the fix; CONFIG_INVALID for an unreadable migrations folder.
 */
export async function checkVersionMigrations(
  db: pg.Pool | pg.ClientBase,
  projection: MigratedProjection,
  version: VersionNumber,
): Promise<void> {
  const drift = await versionMigrationDrift(db, projection, version);
  if (drift.missing.length === 0 && drift.unknown.length === 0) return;
  const name = projection.name;
  const problems: string[] = [];
  if (drift.missing.length > 0)
    problems.push(
      `version ${version} of projection ${name} lacks the code's migrations ${drift.missing.map((m) => m.tag).join(", ")} ` +
        `(its schema was created with other code, and migrate never changes an existing version): ` +
        `create a new version with \`replayable rebuild --projection ${name} --blue-green --execute\` (the changed code gets a new version), ` +
        `or run the code this version was created with`,
    );
  if (drift.unknown.length > 0)
    problems.push(
      `version ${version} of projection ${name} has migrations the code does not know: ${drift.unknown.map(describeApplied).join(", ")} ` +
        `(the code is older than the version's schema and would run against tables it does not know): ` +
        `run the code this version was created with`,
    );
  throw new ReplayableError("VERSION_MIGRATIONS_DIFFER", `refusing to run: ${problems.join("; ")}`, {
    context: {
      projection: name,
      version,
      missing: drift.missing.map((m) => m.tag),
      unknown: drift.unknown.map(describeApplied),
    },
  });
}
