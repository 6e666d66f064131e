/**
 * Session-level advisory locks (PostgreSQL "Advisory Locks", section 13.3.5).
 * The two-int form keeps our locks in a namespace of their own: classid 0x5245 ("RE").
 */
import type pg from "pg";

const NAMESPACE = 0x5245;

/** A lock key: the namespace's second int is derived from a name by hashtext(). */
export interface AdvisoryLockKey {
  readonly name: string;
}

/** Held while migrations run. */
export const MIGRATION_LOCK: AdvisoryLockKey = { name: "migrate" };

/** Held by every `run` member of a projection (shared) and by `rebuild` (exclusive). */
export function projectionLock(projection: string): AdvisoryLockKey {
  return { name: `projection:${projection}` };
}

/**
 * Held by `rebuild --blue-green --execute` while it creates a projection's next version: two at
 * once create one version, and the second finds it registered.
 */
export function versionCreationLock(projection: string): AdvisoryLockKey {
  return { name: `versions:${projection}` };
}

/** Waits for the exclusive lock on `key`. */
export async function advisoryLock(client: pg.ClientBase, key: AdvisoryLockKey): Promise<void> {
  await client.query("SELECT pg_advisory_lock($1, hashtext($2))", [NAMESPACE, key.name]);
}

/** Releases the exclusive lock on `key` (the shared one with `shared`). */
export async function advisoryUnlock(
  client: pg.ClientBase,
  key: AdvisoryLockKey,
  shared = false,
): Promise<void> {
  const fn = shared ? "pg_advisory_unlock_shared" : "pg_advisory_unlock";
  await client.query(`SELECT ${fn}($1, hashtext($2))`, [NAMESPACE, key.name]);
}

/** Tries the lock without waiting: true when taken. `shared` takes the shared form (many holders). */
export async function tryAdvisoryLock(
  client: pg.ClientBase,
  key: AdvisoryLockKey,
  shared: boolean,
): Promise<boolean> {
  const fn = shared ? "pg_try_advisory_lock_shared" : "pg_try_advisory_lock";
  const result = await client.query<{ locked: boolean }>(`SELECT ${fn}($1, hashtext($2)) AS locked`, [
    NAMESPACE,
    key.name,
  ]);
  return result.rows[0]?.locked === true;
}
