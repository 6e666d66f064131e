/**
 * The first connection of a command: made before anything else touches PostgreSQL, so that a TLS
 * or credential mismatch and a missing grant are clear start-up errors (CONFIG_INVALID, exit 2)
 * before any record is read.
 */
import { missingTables } from "../sql/tableExists.js";
import { explainConnectionError, unreachableServer } from "./connectionProblem.js";
import { ENGINE_TABLES, notMigratedError } from "./notMigrated.js";
import { createPool } from "./pool.js";
import { checkPrivileges, type Work } from "./privileges.js";

/**
 * Connects once to `databaseUrl`, checks that replayable's schema exists (unless `work` holds
 * `migrate`, which creates it), and checks the privileges of each of `work` (e.g. `["apply"]` for
 * `run`) for projections with derived `tables`. No server at the address is a DATABASE error naming
 * it; other connection failures that are not a TLS or credential mismatch are thrown as they are.
 * @throws ReplayableError CONFIG_INVALID: an invalid TLS parameter, a TLS or password mismatch
 *   (explainConnectionError), or missing privileges (checkPrivileges).
 * @throws ReplayableError NOT_MIGRATED when replayable's tables do not exist: run `replayable migrate`.
 */
export async function checkDatabase(
  databaseUrl: string,
  work: readonly Work[],
  tables: readonly string[] = [],
): Promise<void> {
  const pool = createPool({ connectionString: databaseUrl, max: 1 });
  try {
    const client = await pool.connect().catch((error: unknown) => {
      throw explainConnectionError(error, databaseUrl) ?? unreachableServer(error, databaseUrl) ?? error;
    });
    try {
      // Every command but `migrate` needs replayable's tables: say so before a privilege check
      // (or the command) meets `relation "replayable.…" does not exist`.
      if (!work.includes("migrate")) {
        const missing = await missingTables(client, ENGINE_TABLES);
        if (missing.length > 0) throw notMigratedError(databaseUrl, missing);
      }
      for (const w of work) await checkPrivileges(client, w, tables);
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
}
