/**
 * Applies the drizzle-kit migrations in `drizzle/`. Safe when several processes
 * start at once: each takes the same session-level advisory lock first, so one
 * migrates and the others wait, then find nothing left to do.
 */
import { join } from "node:path";
import type pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate as drizzleMigrate } from "drizzle-orm/node-postgres/migrator";
import { packageRoot } from "../packageRoot.js";
import { advisoryLock, advisoryUnlock, MIGRATION_LOCK } from "../sql/advisoryLocks.js";

/**
 * Runs every pending migration.
 * @throws the database error of a failing migration; the lock is released either way.
 */
export async function migrate(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await advisoryLock(client, MIGRATION_LOCK);
    try {
      await drizzleMigrate(drizzle(client), {
        migrationsFolder: join(packageRoot(), "drizzle"),
        migrationsSchema: "replayable",
        migrationsTable: "__drizzle_migrations",
      });
    } finally {
      await advisoryUnlock(client, MIGRATION_LOCK);
    }
  } finally {
    client.release();
  }
}
