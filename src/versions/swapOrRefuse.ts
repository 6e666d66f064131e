/**
 * The switch of `promote` and `rollback` ({@link swapVersions}) with a lock timeout reported as a
 * refusal: a reader that holds a stable view longer than the switch's `lock_timeout` makes
 * PostgreSQL cancel the switch with SQLSTATE 55P03 lock_not_available (PostgreSQL docs, "Client
 * Connection Defaults", lock_timeout); the transaction rolled back, so nothing changed and running
 * it again is safe. docs/replay.md promises that message.
 */
import type pg from "pg";
import { sqlState } from "../errors.js";
import { schemaViews } from "../sql/versionViews.js";
import { swapVersions, type Swap } from "./swapVersions.js";

/** The switch done, or refused because a reader held a view past the lock timeout. */
export type SwapResult =
  | { readonly kind: "switched"; readonly auditId: string; readonly views: string[] }
  | { readonly kind: "refused"; readonly reason: "LOCK_TIMEOUT"; readonly message: string };

/**
 * Runs {@link swapVersions} on a connection of `pool`; a 55P03 becomes a `LOCK_TIMEOUT` refusal
 * naming the view PostgreSQL's error names (its `schema`/`table` fields), else every stable view of
 * the projection, and `--lock-timeout-ms` with `swap.lockTimeoutMs`.
 * @throws every other error of {@link swapVersions}.
 */
export async function swapOrRefuse(pool: pg.Pool, swap: Swap): Promise<SwapResult> {
  const client = await pool.connect();
  try {
    return { kind: "switched", ...(await swapVersions(client, swap)) };
  } catch (error) {
    if (sqlState(error) !== "55P03") throw error;
    const named = error as { schema?: unknown; table?: unknown };
    const views =
      typeof named.table === "string"
        ? [`${typeof named.schema === "string" ? named.schema : swap.projection}.${named.table}`]
        : (await schemaViews(client, swap.projection)).map((v) => `${swap.projection}.${v}`);
    return {
      kind: "refused",
      reason: "LOCK_TIMEOUT",
      message: `a reader held ${views.join(", ")} longer than --lock-timeout-ms (${swap.lockTimeoutMs} ms); run it again, or raise --lock-timeout-ms`,
    };
  } finally {
    client.release();
  }
}
