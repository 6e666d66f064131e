/**
 * One transaction around a function: `BEGIN ISOLATION LEVEL READ COMMITTED`, the function, `COMMIT`;
 * on any error `ROLLBACK` and the error rethrown. The batch apply, `dead-letters retry` and
 * `rebuild` all open their transactions here, so BEGIN, COMMIT and ROLLBACK are written once, with
 * one rollback behaviour (emmett's `withTransaction`, graphile/worker's `withPgClient`).
 */
import pg from "pg";
import type { Logger } from "pino";
import { isQueryReadTimeout } from "./pool.js";

/** Options of {@link withTransaction}. */
export interface TransactionOptions {
  /**
   * PostgreSQL `lock_timeout` for this transaction, ms (`SET LOCAL`, sent in the BEGIN's round
   * trip); 0 or absent: the server's setting. A lock wait past it fails with SQLSTATE 55P03.
   */
  readonly lockTimeoutMs?: number;
  /**
   * A schema to set as the transaction's `search_path` (`SET LOCAL`, in the BEGIN's round trip):
   * a blue/green version's schema (docs/design.md "Blue/green versions"). Absent: the session's.
   */
  readonly searchPath?: string;
  /** Where a failed ROLLBACK is logged (warn); it is otherwise ignored, as the first error wins. */
  readonly log?: Pick<Logger, "warn">;
}

/**
 * Runs `work` inside one READ COMMITTED transaction on `client` (checked out by the caller, who
 * releases it; after a thrown error the caller should discard it: a failed ROLLBACK leaves the
 * session inside the transaction). After a client-side query timeout no ROLLBACK is sent: it would
 * queue behind the unanswered query and wait out a second timeout; the discarded connection ends
 * the transaction (or, on a silent network, the server's `idle_in_transaction_session_timeout`).
 * @returns what `work` returned, after COMMIT succeeded.
 * @throws RangeError when `lockTimeoutMs` is not a non-negative integer (before BEGIN).
 * @throws whatever `work`, BEGIN or COMMIT threw, after the ROLLBACK.
 */
export async function withTransaction<T>(
  client: pg.ClientBase,
  work: () => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const lockTimeoutMs = options.lockTimeoutMs ?? 0;
  if (!Number.isSafeInteger(lockTimeoutMs) || lockTimeoutMs < 0)
    throw new RangeError(`lockTimeoutMs must be a non-negative integer, got ${lockTimeoutMs}`);
  // One round trip: SET LOCAL lasts until COMMIT or ROLLBACK (PostgreSQL docs, "SET").
  const statements = ["BEGIN ISOLATION LEVEL READ COMMITTED"];
  if (lockTimeoutMs > 0) statements.push(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
  if (options.searchPath !== undefined)
    statements.push(`SET LOCAL search_path TO ${pg.escapeIdentifier(options.searchPath)}`);
  await client.query(statements.join("; "));
  try {
    const value = await work();
    await client.query("COMMIT");
    return value;
  } catch (error) {
    if (isQueryReadTimeout(error)) throw error;
    await client.query("ROLLBACK").catch((rollbackError: unknown) => {
      options.log?.warn({ err: rollbackError }, "ROLLBACK failed; the connection is discarded");
    });
    throw error;
  }
}
