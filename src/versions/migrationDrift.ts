/**
 * Whether a version's schema has exactly the migrations the code declares (docs/design.md
 * "Blue/green versions"): a version's migrations are applied once, when it is created, so code
 * whose migrations folder differs from them must not run as its member.
 */
import type { AppliedMigration } from "../sql/appliedMigrations.js";

/** A migration of the code's folder: its journal entry and the hash drizzle records for it. */
export interface DeclaredMigration {
  /** The journal entry's `tag` (its `.sql` file's name without the extension), e.g. `0001_add_note`. */
  readonly tag: string;
  /** The journal entry's `when` (ms since the epoch), as a decimal string. */
  readonly when: string;
  /** sha256 (hex) of the `.sql` file, as drizzle-orm's readMigrationFiles computes it. */
  readonly hash: string;
}

/** What {@link migrationDrift} found; both empty: the version's schema matches the code. */
export interface MigrationDrift {
  /** The code's migrations the version's schema lacks (or has with another content), in journal order. */
  readonly missing: readonly DeclaredMigration[];
  /** The version's migrations the code does not declare (older or other code), in applied order. */
  readonly unknown: readonly AppliedMigration[];
}

/**
 * Compares the code's migrations with those applied to a version, by `when` = `created_at` and
 * hash, as drizzle records them (a migration edited after it was applied is in both lists).
 * Pure; never throws.
 * @example migrationDrift([{ tag: "0000_a", when: "1", hash: "h" }], []) // missing: [0000_a]
 */
export function migrationDrift(
  declared: readonly DeclaredMigration[],
  applied: readonly AppliedMigration[],
): MigrationDrift {
  const key = (when: string, hash: string) => `${when}/${hash}`;
  const appliedKeys = new Set(applied.map((a) => key(a.createdAt, a.hash)));
  const declaredKeys = new Set(declared.map((d) => key(d.when, d.hash)));
  return {
    missing: declared.filter((d) => !appliedKeys.has(key(d.when, d.hash))),
    unknown: applied.filter((a) => !declaredKeys.has(key(a.createdAt, a.hash))),
  };
}

/** An applied migration named for a message: drizzle records no tag, so its `when` and hash. */
export function describeApplied(migration: AppliedMigration): string {
  return `when ${migration.createdAt} (hash ${migration.hash.slice(0, 12)})`;
}
