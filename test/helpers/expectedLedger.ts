/** The ledger checksum expected after applying several streams (and single effects) once each. */
import { ledgerChecksum, type LedgerState } from "../../src/projections/ledger/checksum.js";

/** One credited (positive) or debited (negative) amount of an account, in cents. */
export interface BalanceEffect {
  readonly account: string;
  readonly delta: bigint;
}

/** Merges the expected states of streams with distinct order ids, plus extra balance effects. */
export function combinedChecksum(
  states: readonly LedgerState[],
  effects: readonly BalanceEffect[] = [],
): string {
  const balances = new Map<string, bigint>();
  const orders = new Map<string, "paid" | "shipped">();
  for (const state of states) {
    for (const [account, balance] of state.balances)
      balances.set(account, (balances.get(account) ?? 0n) + balance);
    for (const [order, s] of state.orders) orders.set(order, s);
  }
  for (const { account, delta } of effects) balances.set(account, (balances.get(account) ?? 0n) + delta);
  return ledgerChecksum({ balances, orders });
}
