/**
 * Which privileges the current role lacks, by PostgreSQL's access privilege inquiry functions
 * (`has_database_privilege`, `has_schema_privilege`, `has_table_privilege`,
 * `has_sequence_privilege`; docs "System Information Functions and Operators"). They count
 * privileges held through role membership and PUBLIC, as the server's own checks do.
 */
import type pg from "pg";

/** An object of the database the role needs a privilege on. */
export interface PrivilegeCheck {
  readonly kind: "database" | "schema" | "table" | "sequence";
  /** Quoted identifier(s) as in SQL, e.g. `replayable.checkpoints`; ignored for `database`. */
  readonly name: string;
  /** One privilege, e.g. `USAGE`, `SELECT`. */
  readonly privilege: string;
}

/** What {@link missingPrivileges} returns: the checks failed, the role and the database as quoted identifiers. */
export interface MissingPrivileges {
  readonly role: string;
  readonly database: string;
  readonly missing: readonly PrivilegeCheck[];
}

/**
 * The checks of `checks` the current role fails, in the order given. A schema, table or sequence
 * that does not exist is skipped (its absence is reported by the table checks, or created by
 * migrations).
 */
export async function missingPrivileges(
  client: pg.Pool | pg.ClientBase,
  checks: readonly PrivilegeCheck[],
): Promise<MissingPrivileges> {
  const result = await client.query<{ n: number; granted: boolean | null; role: string; database: string }>(
    `SELECT c.n::int AS n, quote_ident(current_user) AS role, quote_ident(current_database()) AS database,
            CASE c.kind
              WHEN 'database' THEN has_database_privilege(current_database(), c.privilege)
              WHEN 'schema' THEN (SELECT has_schema_privilege(s.oid, c.privilege) FROM pg_namespace s
                                   WHERE s.oid = to_regnamespace(c.name))
              WHEN 'table' THEN has_table_privilege(to_regclass(c.name), c.privilege)
              WHEN 'sequence' THEN has_sequence_privilege(to_regclass(c.name), c.privilege)
            END AS granted
       FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS c(kind, name, privilege, n)
       ORDER BY c.n`,
    [checks.map((c) => c.kind), checks.map((c) => c.name), checks.map((c) => c.privilege)],
  );
  const first = result.rows[0];
  return {
    role: first?.role ?? "",
    database: first?.database ?? "",
    missing: result.rows.filter((r) => r.granted === false).map((r) => checks[r.n - 1]!),
  };
}
