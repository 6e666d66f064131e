/**
 * The ledger's set-based batch apply: one statement per kind of effect instead of one per record.
 * It must leave the same tables as applying the records one by one in offset order
 * (test/integration/projections/ledgerBatch.test.ts checks that on the same stream).
 */
import type { ApplyContext, DecodedRecord } from "../../projection.js";
import type { LedgerEvent } from "./events.js";

type OrderEvent = Extract<LedgerEvent, { type: "ledger.order.paid" | "ledger.order.shipped" }>;

// Named statements: node-postgres prepares each once per connection, so PostgreSQL parses and plans
// them once instead of in every transaction. Times travel as epoch milliseconds (no ISO text to build
// and parse per record); to_timestamp keeps them exact to the millisecond.
const CREDIT_DEBIT = {
  name: "ledger_batch_credit_debit",
  text: `INSERT INTO ledger.ledger_accounts (account_id, balance_cents)
     SELECT a, d FROM unnest($1::text[], $2::bigint[]) AS u(a, d)
     ON CONFLICT (account_id) DO UPDATE SET balance_cents = ledger_accounts.balance_cents + excluded.balance_cents`,
} as const;
const ORDERS_PAID = {
  name: "ledger_batch_orders_paid",
  text: `INSERT INTO ledger.ledger_orders (order_id, account_id, amount_cents, state, paid_at)
     SELECT o, a, m, 'paid', to_timestamp(t / 1000.0)
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS u(o, a, m, t)
     ON CONFLICT (order_id) DO UPDATE
       SET account_id = excluded.account_id, amount_cents = excluded.amount_cents, paid_at = excluded.paid_at
       WHERE ledger_orders.state = 'paid'`,
} as const;
const ORDERS_SHIPPED = {
  name: "ledger_batch_orders_shipped",
  text: `UPDATE ledger.ledger_orders AS o SET state = 'shipped', shipped_at = to_timestamp(u.ms / 1000.0)
     FROM unnest($1::text[], $2::bigint[]) AS u(id, ms)
     WHERE o.order_id = u.id AND o.state = 'paid'
     RETURNING o.order_id`,
} as const;

/**
 * Applies a batch's fresh ledger events:
 * - credits and debits summed per account, then one `INSERT … SELECT FROM unnest … ON CONFLICT DO UPDATE`;
 * - orders paid: one upsert; orders shipped: one `UPDATE … FROM unnest … WHERE state = 'paid'`,
 *   after the paid ones. When an order appears in the batch in any other shape than
 *   "paid, then shipped" (e.g. shipped before paid, or paid twice) the order events are applied one
 *   by one with `applyOne`, so the outcome stays that of offset order.
 */
export async function applyLedgerBatch(
  ctx: ApplyContext,
  records: readonly DecodedRecord<LedgerEvent>[],
  applyOne: (ctx: ApplyContext, record: DecodedRecord<LedgerEvent>) => Promise<void>,
): Promise<void> {
  const deltas = new Map<string, bigint>();
  const orders: DecodedRecord<OrderEvent>[] = [];
  for (const item of records) {
    const event = item.value;
    if (event.type === "ledger.account.credited" || event.type === "ledger.account.debited") {
      const delta = BigInt(event.type === "ledger.account.credited" ? event.amount : -event.amount);
      deltas.set(event.account, (deltas.get(event.account) ?? 0n) + delta);
    } else {
      orders.push(item as DecodedRecord<OrderEvent>);
    }
  }
  if (deltas.size > 0) {
    await ctx.client.query({
      ...CREDIT_DEBIT,
      values: [[...deltas.keys()], [...deltas.values()].map(String)],
    });
  }
  if (orders.length === 0) return;
  if (!paidThenShipped(orders)) {
    for (const item of orders) await applyOne(ctx, item);
    return;
  }
  const paid = orders.filter((o) => o.value.type === "ledger.order.paid") as DecodedRecord<
    Extract<OrderEvent, { type: "ledger.order.paid" }>
  >[];
  const shipped = orders.filter((o) => o.value.type === "ledger.order.shipped") as DecodedRecord<
    Extract<OrderEvent, { type: "ledger.order.shipped" }>
  >[];
  if (paid.length > 0) {
    await ctx.client.query({
      ...ORDERS_PAID,
      values: [
        paid.map((p) => p.value.order),
        paid.map((p) => p.value.account),
        paid.map((p) => String(p.value.amount)),
        paid.map((p) => p.record.timestamp),
      ],
    });
  }
  if (shipped.length > 0) {
    const updated = await ctx.client.query<{ order_id: string }>({
      ...ORDERS_SHIPPED,
      values: [shipped.map((s) => s.value.order), shipped.map((s) => String(s.value.shippedAt.getTime()))],
    });
    if (updated.rowCount !== shipped.length) {
      const done = new Set(updated.rows.map((r) => r.order_id));
      for (const s of shipped.filter((x) => !done.has(x.value.order))) {
        ctx.log.info(
          { offset: s.record.offset, order: s.value.order },
          "order not shipped: already shipped, or never paid",
        );
      }
    }
  }
}

/** True when every order occurs at most once as paid and at most once as shipped, paid first. */
function paidThenShipped(orders: readonly DecodedRecord<OrderEvent>[]): boolean {
  const seen = new Map<string, Set<OrderEvent["type"]>>();
  for (const { value } of orders) {
    const types = seen.get(value.order) ?? new Set();
    if (types.has(value.type)) return false;
    if (value.type === "ledger.order.paid" && types.has("ledger.order.shipped")) return false;
    types.add(value.type);
    seen.set(value.order, types);
  }
  return true;
}
