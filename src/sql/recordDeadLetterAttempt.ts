/** A retry of a dead letter failed again: count the attempt and keep the latest error. */
import type pg from "pg";

/** Sets `attempts + 1`, `last_attempt_at = now()` and the new error of dead letter `id` (inside the retry's transaction). */
export async function recordDeadLetterAttempt(
  client: pg.ClientBase,
  id: string,
  errorCode: string,
  errorMessage: string,
): Promise<void> {
  await client.query(
    `UPDATE replayable.dead_letters
     SET attempts = attempts + 1, last_attempt_at = now(), error_code = $2, error_message = $3
     WHERE id = $1::bigint`,
    [id, errorCode, errorMessage],
  );
}
