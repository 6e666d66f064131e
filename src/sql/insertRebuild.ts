/**
 * The audit row of a `rebuild` (when, by whom, and which offsets it reset), or of a conversion to
 * versioned under the plain key it ends (`offsets.convertedTo`): a new rebuild epoch either way.
 */
import type pg from "pg";

/** What {@link insertRebuild} records. `offsets` is stored as jsonb. */
export interface RebuildAudit {
  readonly projection: string;
  readonly groupId: string;
  readonly osUser: string;
  readonly host: string;
  readonly forced: boolean;
  readonly offsets: unknown;
}

/** Inserts one row into replayable.rebuilds (inside the rebuild's or conversion's transaction); returns its id. */
export async function insertRebuild(client: pg.ClientBase, audit: RebuildAudit): Promise<string> {
  const result = await client.query<{ id: string }>(
    `INSERT INTO replayable.rebuilds (projection, group_id, os_user, host, forced, offsets)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING id`,
    [
      audit.projection,
      audit.groupId,
      audit.osUser,
      audit.host,
      audit.forced ? 1 : 0,
      JSON.stringify(audit.offsets),
    ],
  );
  return result.rows[0]!.id;
}
