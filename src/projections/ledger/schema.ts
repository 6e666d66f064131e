/** The ledger projection's derived tables, in the PostgreSQL schema `ledger`. */
import { sql } from "drizzle-orm";
import { bigint, pgSchema, text, timestamp } from "drizzle-orm/pg-core";

export const ledgerSchema = pgSchema("ledger");

/** Account balances: credited/debited events add and subtract (only dedupe keeps this right). */
export const ledgerAccounts = ledgerSchema.table("ledger_accounts", {
  accountId: text("account_id").primaryKey(),
  balanceCents: bigint("balance_cents", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
});

/** Orders: `paid` is a set, `shipped` a conditional update (`WHERE state = 'paid'`). */
export const ledgerOrders = ledgerSchema.table("ledger_orders", {
  orderId: text("order_id").primaryKey(),
  accountId: text("account_id").notNull(),
  amountCents: bigint("amount_cents", { mode: "bigint" }).notNull(),
  state: text("state", { enum: ["paid", "shipped"] }).notNull(),
  paidAt: timestamp("paid_at", { withTimezone: true }),
  shippedAt: timestamp("shipped_at", { withTimezone: true }),
});
