/**
 * The registry of blue/green versions, `replayable.projection_versions`, and their audit,
 * `replayable.projection_version_audit` (docs/design.md "Blue/green versions").
 */
import type pg from "pg";

/** A version's state: see VERSION_STATES in src/db/versionsSchema.ts. */
export type VersionState = "live" | "shadow" | "retired" | "dropped";

/** One row of replayable.projection_versions. Times are ISO strings (PostgreSQL transaction time). */
export interface VersionRow {
  readonly projection: string;
  readonly version: number;
  readonly schemaName: string;
  readonly groupId: string;
  readonly state: VersionState;
  readonly createdAt: string;
  readonly promotedAt: string | null;
  readonly retiredAt: string | null;
}

const COLUMNS = `projection, version, schema_name AS "schemaName", group_id AS "groupId", state,
  created_at::text AS "createdAt", promoted_at::text AS "promotedAt", retired_at::text AS "retiredAt"`;

/**
 * Every version of `projection`, oldest first. With `forUpdate` (inside a transaction) the rows are
 * locked, so two commands changing the projection's versions serialize.
 */
export async function selectVersions(
  db: pg.Pool | pg.ClientBase,
  projection: string,
  forUpdate = false,
): Promise<VersionRow[]> {
  const result = await db.query<VersionRow>(
    `SELECT ${COLUMNS} FROM replayable.projection_versions WHERE projection = $1 ORDER BY version${forUpdate ? " FOR UPDATE" : ""}`,
    [projection],
  );
  return result.rows;
}

/**
 * Registers a new version. The primary key (projection, version) makes a concurrent creation of the
 * same number fail (23505) instead of sharing it; a second `live` row fails on the partial unique index.
 */
export async function insertVersion(
  client: pg.ClientBase,
  row: Pick<VersionRow, "projection" | "version" | "schemaName" | "groupId" | "state">,
): Promise<void> {
  await client.query(
    `INSERT INTO replayable.projection_versions (projection, version, schema_name, group_id, state, promoted_at)
     VALUES ($1, $2, $3, $4, $5, CASE WHEN $5 = 'live' THEN now() END)`,
    [row.projection, row.version, row.schemaName, row.groupId, row.state],
  );
}

/**
 * Sets a version's state and the time column that goes with it (`promoted_at` for live,
 * `retired_at` for retired, `dropped_at` for dropped), in the caller's transaction.
 */
export async function setVersionState(
  client: pg.ClientBase,
  projection: string,
  version: number,
  state: VersionState,
): Promise<void> {
  await client.query(
    `UPDATE replayable.projection_versions SET state = $3,
       promoted_at = CASE WHEN $3 = 'live' THEN now() ELSE promoted_at END,
       retired_at = CASE WHEN $3 = 'retired' THEN now() ELSE retired_at END,
       dropped_at = CASE WHEN $3 = 'dropped' THEN now() ELSE dropped_at END
     WHERE projection = $1 AND version = $2`,
    [projection, version, state],
  );
}

/** What one audit row records; `offsets` and `checksums` are stored as jsonb. */
export interface VersionAudit {
  readonly projection: string;
  readonly action: "create" | "promote" | "rollback" | "drop";
  readonly version: number;
  readonly fromVersion?: number | undefined;
  readonly osUser: string;
  readonly host: string;
  readonly forced: boolean;
  readonly offsets?: unknown;
  readonly checksums?: unknown;
}

/** Inserts an audit row in the caller's transaction; returns its id (a decimal string). */
export async function insertVersionAudit(client: pg.ClientBase, audit: VersionAudit): Promise<string> {
  const result = await client.query<{ id: string }>(
    `INSERT INTO replayable.projection_version_audit
       (projection, action, version, from_version, os_user, host, forced, offsets, checksums)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb) RETURNING id`,
    [
      audit.projection,
      audit.action,
      audit.version,
      audit.fromVersion ?? null,
      audit.osUser,
      audit.host,
      audit.forced,
      JSON.stringify(audit.offsets ?? {}),
      JSON.stringify(audit.checksums ?? {}),
    ],
  );
  return result.rows[0]!.id;
}
