/**
 * The first connection of a command: made before anything else touches PostgreSQL, so that a TLS
 * or credential mismatch and a missing grant are clear start-up errors (CONFIG_INVALID, exit 2)
 * before any record is read.
 */
import { explainConnectionError } from "./connectionProblem.js";
import { createPool } from "./pool.js";
import { checkPrivileges, type Work } from "./privileges.js";

/**
 * Connects once to `databaseUrl` and checks the privileges of each of `work` (e.g. `["migrate",
 * "apply"]` for `run`) for projections with derived `tables`. Connection failures that are not a
 * TLS or credential mismatch (an outage) are thrown as they are.
 * @throws ReplayableError CONFIG_INVALID: an invalid TLS parameter, a TLS or password mismatch
 *   (explainConnectionError), or missing privileges (checkPrivileges).
 */
export async function checkDatabase(
  databaseUrl: string,
  work: readonly Work[],
  tables: readonly string[] = [],
): Promise<void> {
  const pool = createPool({ connectionString: databaseUrl, max: 1 });
  try {
    const client = await pool.connect().catch((error: unknown) => {
      throw explainConnectionError(error, databaseUrl) ?? error;
    });
    try {
      for (const w of work) await checkPrivileges(client, w, tables);
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
}
