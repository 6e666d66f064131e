/**
 * The ledger projection: the seed's three shapes of idempotency side by side.
 * - credited/debited: `balance += amount`, not idempotent: only dedupe (by `ce_id`) keeps it right;
 * - order paid: a set (`state = 'paid'`), harmless twice;
 * - order shipped: a conditional write (`WHERE state = 'paid'`), zero rows the second time.
 */
import { and, eq, sql } from "drizzle-orm";
import type { ApplyContext, DecodedRecord, Projection } from "../../projection.js";
import { applyLedgerBatch } from "./applyLedgerBatch.js";
import { decodeLedgerEvent, type LedgerEvent } from "./events.js";
import { ledgerAccounts, ledgerOrders } from "./schema.js";

/** Applies one ledger event inside the dedupe-then-effect transaction. */
async function applyLedgerEvent(
  ctx: ApplyContext,
  { record, value: event }: DecodedRecord<LedgerEvent>,
): Promise<void> {
  const { db, log } = ctx;
  switch (event.type) {
    case "ledger.account.credited":
    case "ledger.account.debited": {
      const delta = BigInt(event.type === "ledger.account.credited" ? event.amount : -event.amount);
      await db
        .insert(ledgerAccounts)
        .values({ accountId: event.account, balanceCents: delta })
        .onConflictDoUpdate({
          target: ledgerAccounts.accountId,
          set: { balanceCents: sql`${ledgerAccounts.balanceCents} + excluded.balance_cents` },
        });
      return;
    }
    case "ledger.order.paid": {
      // In SQL, as applyLedgerBatch does: exact to the millisecond, and a timestamp outside
      // PostgreSQL's range (Kafka accepts any past CreateTime) is its error 22008, so the record is
      // dead-lettered; JavaScript's Date would throw a RangeError, a fault retried forever.
      const paidAt = sql<Date>`to_timestamp(${record.timestamp}::bigint / 1000.0)`;
      await db
        .insert(ledgerOrders)
        .values({
          orderId: event.order,
          accountId: event.account,
          amountCents: BigInt(event.amount),
          state: "paid",
          paidAt,
        })
        .onConflictDoUpdate({
          target: ledgerOrders.orderId,
          set: { accountId: event.account, amountCents: BigInt(event.amount), paidAt },
          setWhere: eq(ledgerOrders.state, "paid"),
        });
      return;
    }
    case "ledger.order.shipped": {
      const updated = await db
        .update(ledgerOrders)
        .set({ state: "shipped", shippedAt: event.shippedAt })
        .where(and(eq(ledgerOrders.orderId, event.order), eq(ledgerOrders.state, "paid")))
        .returning({ orderId: ledgerOrders.orderId });
      if (updated.length === 0) {
        log.info(
          { offset: record.offset, order: event.order },
          "order not shipped: already shipped, or never paid",
        );
      }
      return;
    }
  }
}

/** The ledger projection, deduplicated by the CloudEvents `ce_id` header. */
export const ledgerProjection: Projection<LedgerEvent> = {
  name: "ledger",
  dedupe: { kind: "event-id", header: "ce_id" },
  defaultTopics: ["ledger-events"],
  tables: ["ledger.ledger_accounts", "ledger.ledger_orders"],
  decode: decodeLedgerEvent,
  apply: applyLedgerEvent,
  applyBatch: applyLedgerBatch,
};

/** The ledger without its batch apply: every record in its own savepoint (for comparisons and benchmarks). */
export const ledgerPerRecordProjection: Projection<LedgerEvent> = {
  ...ledgerProjection,
  applyBatch: undefined,
};
