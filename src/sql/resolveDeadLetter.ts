/** Marks a dead letter resolved: applied by a retry, found to be a duplicate, or discarded. */
import type pg from "pg";
import type { DEAD_LETTER_RESOLUTIONS } from "../db/schema.js";

/** How a dead letter was resolved. */
export type DeadLetterResolution = (typeof DEAD_LETTER_RESOLUTIONS)[number];

/**
 * Sets `resolved_at = now()`, `resolution` and `resolved_by` of dead letter `id` if it is still
 * unresolved. A retry (`applied`, `duplicate`) also counts an attempt. `deleteBytes` (discard
 * only, on the operator's explicit request) clears key, value and headers.
 * @returns true when the row was unresolved and is now resolved.
 */
export async function resolveDeadLetter(
  client: pg.Pool | pg.ClientBase,
  id: string,
  resolution: DeadLetterResolution,
  resolvedBy: string,
  deleteBytes = false,
): Promise<boolean> {
  const retried = resolution !== "discarded";
  const result = await client.query(
    `UPDATE replayable.dead_letters
     SET resolved_at = now(), resolution = $2, resolved_by = $3,
         attempts = attempts + CASE WHEN $4 THEN 1 ELSE 0 END,
         last_attempt_at = CASE WHEN $4 THEN now() ELSE last_attempt_at END,
         key = CASE WHEN $5 THEN NULL ELSE key END,
         value = CASE WHEN $5 THEN NULL ELSE value END,
         headers = CASE WHEN $5 THEN '{}'::jsonb ELSE headers END,
         bytes_deleted_at = CASE WHEN $5 THEN now() ELSE bytes_deleted_at END
     WHERE id = $1::bigint AND resolved_at IS NULL`,
    [id, resolution, resolvedBy, retried, deleteBytes],
  );
  return result.rowCount === 1;
}
