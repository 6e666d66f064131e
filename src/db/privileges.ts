/**
 * The PostgreSQL privileges each kind of work needs (docs/security.md "PostgreSQL" lists the same
 * grants), checked at start-up so that a missing grant is one clear error naming each GRANT
 * statement, not a "permission denied" in the middle of a batch retried for ever.
 */
import pg from "pg";
import { ReplayableError } from "../errors.js";
import type { PrivilegeCheck } from "../sql/missingPrivileges.js";
import { missingPrivileges } from "../sql/missingPrivileges.js";

/**
 * What a command is about to do:
 * - `migrate`: drizzle's migrator runs `CREATE SCHEMA IF NOT EXISTS replayable` and
 *   `CREATE TABLE IF NOT EXISTS` on every start, and PostgreSQL checks CREATE before it sees that
 *   the object exists;
 * - `apply`: `run` and `dead-letters retry` (checkpoints, event ids, dead letters, the
 *   projection's tables);
 * - `rebuild`: `apply`, plus emptying the projection (TRUNCATE) and its dedupe state (DELETE),
 *   and recording the rebuild;
 * - `prune`: deleting old event ids.
 */
export type Work = "migrate" | "apply" | "rebuild" | "prune";

const S = "replayable";
const ENGINE: Record<Exclude<Work, "migrate">, Record<string, readonly string[]>> = {
  apply: {
    checkpoints: ["SELECT", "INSERT", "UPDATE"],
    processed_events: ["SELECT", "INSERT"],
    dead_letters: ["SELECT", "INSERT", "UPDATE"],
    rebuilds: ["SELECT"],
    projection_topics: ["SELECT", "INSERT"],
  },
  rebuild: {
    checkpoints: ["SELECT", "INSERT", "UPDATE", "DELETE"],
    processed_events: ["SELECT", "INSERT", "DELETE"],
    dead_letters: ["SELECT", "INSERT", "UPDATE"],
    rebuilds: ["SELECT", "INSERT"],
    projection_topics: ["SELECT", "INSERT"],
  },
  prune: { processed_events: ["SELECT", "DELETE"], projection_topics: ["SELECT"] },
};
const SEQUENCES: Record<Exclude<Work, "migrate">, readonly string[]> = {
  apply: ["dead_letters_id_seq"],
  rebuild: ["dead_letters_id_seq", "rebuilds_id_seq"],
  prune: [],
};
const PROJECTION_TABLE: Record<Exclude<Work, "migrate">, readonly string[]> = {
  apply: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  rebuild: ["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE"],
  prune: [],
};

/** A table name as written in a projection (`schema.table`, unquoted parts) as an SQL identifier. */
export function quoteName(name: string): string {
  return name
    .split(".")
    .map((part) => (/^[a-z_][a-z0-9_$]*$/.test(part) ? part : pg.escapeIdentifier(part)))
    .join(".");
}

/** The checks of `work` for projections whose derived tables are `tables` (schema-qualified or not). */
export function privilegeChecks(work: Work, tables: readonly string[]): PrivilegeCheck[] {
  if (work === "migrate")
    return [
      { kind: "database", name: "", privilege: "CREATE" },
      { kind: "schema", name: S, privilege: "CREATE" },
    ];
  const checks: PrivilegeCheck[] = [];
  const add = (kind: PrivilegeCheck["kind"], name: string, privileges: readonly string[]) => {
    for (const privilege of privileges)
      if (!checks.some((c) => c.kind === kind && c.name === name && c.privilege === privilege))
        checks.push({ kind, name, privilege });
  };
  add("schema", S, ["USAGE"]);
  for (const [table, privileges] of Object.entries(ENGINE[work])) add("table", `${S}.${table}`, privileges);
  for (const sequence of SEQUENCES[work]) add("sequence", `${S}.${sequence}`, ["USAGE"]);
  for (const table of tables) {
    const quoted = quoteName(table);
    const dot = quoted.lastIndexOf(".");
    if (dot > 0 && PROJECTION_TABLE[work].length > 0) add("schema", quoted.slice(0, dot), ["USAGE"]);
    add("table", quoted, PROJECTION_TABLE[work]);
  }
  return checks;
}

/**
 * The extra checks of `run` for a blue/green versioned projection: it reads the version registry
 * (`replayable.projection_versions`) to find the version, then the version's migrations table
 * (`replayable."__drizzle_migrations_<name>@v<N>"`, once the version is known) to check that the
 * code is the code the version was made for. The schema's USAGE comes with them.
 * @param migrationsTable the version's migrations table in schema replayable, unquoted; undefined
 *   before the version is resolved.
 */
export function versionedRunChecks(migrationsTable?: string): PrivilegeCheck[] {
  const checks: PrivilegeCheck[] = [
    { kind: "schema", name: S, privilege: "USAGE" },
    { kind: "table", name: `${S}.projection_versions`, privilege: "SELECT" },
  ];
  if (migrationsTable !== undefined)
    checks.push({ kind: "table", name: quoteName(`${S}.${migrationsTable}`), privilege: "SELECT" });
  return checks;
}

/**
 * Checks the grants of {@link versionedRunChecks} before `run` reads the registry or the version's
 * migrations, so a missing grant is the GRANT statement, not a raw "permission denied".
 * @throws ReplayableError CONFIG_INVALID as {@link checkPrivileges}.
 */
export async function checkVersionedRunPrivileges(
  client: pg.Pool | pg.ClientBase,
  migrationsTable?: string,
): Promise<void> {
  await throwMissing(client, versionedRunChecks(migrationsTable), "apply");
}

/** One GRANT statement per object, its missing privileges together, in the order of `missing`. */
export function grantStatements(
  missing: readonly PrivilegeCheck[],
  role: string,
  database: string,
): string[] {
  const byObject = new Map<string, string[]>();
  for (const check of missing) {
    const on =
      check.kind === "database"
        ? `DATABASE ${database}`
        : check.kind === "schema"
          ? `SCHEMA ${check.name}`
          : check.kind === "sequence"
            ? `SEQUENCE ${check.name}`
            : check.name;
    byObject.set(on, [...(byObject.get(on) ?? []), check.privilege]);
  }
  return [...byObject].map(([on, privileges]) => `GRANT ${privileges.join(", ")} ON ${on} TO ${role};`);
}

/**
 * Checks that the current role holds every privilege `work` needs on replayable's schema and on
 * `tables` (the projections' derived tables).
 * @throws ReplayableError CONFIG_INVALID (the CLI exits 2) listing one GRANT statement per object,
 *   to be run by the objects' owner; for `migrate`, also how to migrate with another role.
 */
export async function checkPrivileges(
  client: pg.Pool | pg.ClientBase,
  work: Work,
  tables: readonly string[],
): Promise<void> {
  await throwMissing(client, privilegeChecks(work, tables), work);
}

/** Throws {@link checkPrivileges}'s error when the role fails some of `checks`. */
async function throwMissing(
  client: pg.Pool | pg.ClientBase,
  checks: readonly PrivilegeCheck[],
  work: Work,
): Promise<void> {
  const { missing, role, database } = await missingPrivileges(client, checks);
  if (missing.length === 0) return;
  const grants = grantStatements(missing, role, database).map((g) => `    ${g}`);
  const hint =
    work === "migrate"
      ? "\n  or apply migrations with the role that owns the schemas (`replayable migrate`) and start `run` with --no-migrate (docs/security.md)"
      : "\n  (docs/security.md lists the grants of a runtime role)";
  throw new ReplayableError(
    "CONFIG_INVALID",
    `role ${role} lacks privileges for ${work === "migrate" ? "migrations" : work}; as the owner of these objects run:\n${grants.join("\n")}${hint}`,
    { context: { role, missing: missing.map((m) => `${m.privilege} ${m.kind} ${m.name}`) } },
  );
}
