/** The ledger's expected-state checksum: what `produce ledger` predicts and `checksum` reads back. */
import { createHash } from "node:crypto";
import type { Db } from "../../db/pool.js";
import { ledgerAccounts, ledgerOrders } from "./schema.js";

/** Final state of the ledger: balance per account (cents) and state per order. */
export interface LedgerState {
  readonly balances: ReadonlyMap<string, bigint>;
  readonly orders: ReadonlyMap<string, "paid" | "shipped">;
}

/**
 * SHA-256 (hex) over the sorted lines `account <id> <balance>` and `order <id> <state>`.
 * Accounts whose balance is 0 count the same as absent ones.
 */
export function ledgerChecksum(state: LedgerState): string {
  const lines: string[] = [];
  for (const [account, balance] of state.balances)
    if (balance !== 0n) lines.push(`account ${account} ${balance}`);
  for (const [order, s] of state.orders) lines.push(`order ${order} ${s}`);
  lines.sort();
  return createHash("sha256").update(lines.join("\n")).digest("hex");
}

/** Reads the ledger's derived tables into a {@link LedgerState}. */
export async function readLedgerState(db: Db): Promise<LedgerState> {
  const accounts = await db.select().from(ledgerAccounts);
  const orders = await db
    .select({ orderId: ledgerOrders.orderId, state: ledgerOrders.state })
    .from(ledgerOrders);
  return {
    balances: new Map(accounts.map((a) => [a.accountId, BigInt(a.balanceCents)])),
    orders: new Map(orders.map((o) => [o.orderId, o.state])),
  };
}
