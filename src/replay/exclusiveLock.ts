/**
 * The projection's exclusive advisory lock for `replay --execute` and `rebuild`. Every `replayable
 * run` of the projection holds the shared form for its lifetime (ConsumerService.start), so while
 * this is held no member of the projection can start, and it cannot be taken while one runs.
 */
import type pg from "pg";
import { advisoryUnlock, projectionLock, tryAdvisoryLock } from "../sql/advisoryLocks.js";

/**
 * Runs `fn` on a client holding the exclusive lock of `projection`, then unlocks and releases it.
 * @returns `{ locked: false }` without running `fn` when another session holds the lock (a `run`
 *   or another rebuild of the projection).
 */
export async function withExclusiveProjectionLock<T>(
  pool: pg.Pool,
  projection: string,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<{ locked: true; value: T } | { locked: false }> {
  const client = await pool.connect();
  let broken = false;
  try {
    const key = projectionLock(projection);
    if (!(await tryAdvisoryLock(client, key, false))) return { locked: false };
    try {
      return { locked: true, value: await fn(client) };
    } finally {
      await advisoryUnlock(client, key).catch(() => {
        broken = true; // the session ends with the connection, and the lock with it
      });
    }
  } finally {
    client.release(broken);
  }
}

/** The message when the lock is held elsewhere (`verb`: what was refused, e.g. "rebuild"). */
export function projectionLockedMessage(projection: string, verb: string): string {
  return `cannot ${verb}: projection ${projection} is in use: a \`replayable run\` of it, or a rebuild, holds its advisory lock (see pg_locks where locktype = 'advisory'). Stop the run, or wait for the rebuild to finish, then run the command again.`;
}
