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
 * - order events in rounds ({@link orderRounds}): per round one upsert of the orders paid, then one
 *   `UPDATE … FROM unnest … WHERE state = 'paid'` of the orders shipped. A round holds each order at
 *   most once as paid and once as shipped, paid first, and an order's events go to rounds in offset
 *   order, so the outcome is that of applying the records one by one in offset order: an order paid
 *   twice in a batch (a re-sent record under offset dedupe) costs one more round, not the whole
 *   batch's orders applied one statement per record.
 */
export async function applyLedgerBatch(
  ctx: ApplyContext,
  records: readonly DecodedRecord<LedgerEvent>[],
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
  for (const round of orderRounds(orders)) await applyOrderRound(ctx, round);
}

/** One round's order events: each order at most once as paid and once as shipped, paid first. */
async function applyOrderRound(
  ctx: ApplyContext,
  orders: readonly DecodedRecord<OrderEvent>[],
): Promise<void> {
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
  if (shipped.length === 0) return;
  const updated = await ctx.client.query<{ order_id: string }>({
    ...ORDERS_SHIPPED,
    values: [shipped.map((s) => s.value.order), shipped.map((s) => String(s.value.shippedAt.getTime()))],
  });
  if (updated.rowCount === shipped.length) return;
  const done = new Set(updated.rows.map((r) => r.order_id));
  for (const s of shipped.filter((x) => !done.has(x.value.order))) {
    ctx.log.info(
      { offset: s.record.offset, order: s.value.order },
      "order not shipped: already shipped, or never paid",
    );
  }
}

/**
 * Splits order events (in offset order) into rounds that one upsert of the paid and one update of
 * the shipped apply exactly as offset order would: an order's event goes to the round of its
 * previous event unless that round already holds the same type for the order, or it is a `paid`
 * after the round's `shipped`; then to the next round. Events of different orders touch different
 * rows, so their relative order does not matter. Pure; exported for its unit test.
 * @returns the rounds in the order they must run; each keeps offset order.
 */
export function orderRounds<E extends DecodedRecord<OrderEvent>>(orders: readonly E[]): E[][] {
  const rounds: E[][] = [];
  const last = new Map<string, { round: number; types: Set<OrderEvent["type"]> }>();
  for (const item of orders) {
    const { order, type } = item.value;
    let at = last.get(order);
    if (at === undefined) {
      at = { round: 0, types: new Set() };
      last.set(order, at);
    } else if (at.types.has(type) || (type === "ledger.order.paid" && at.types.has("ledger.order.shipped"))) {
      at.round += 1;
      at.types = new Set();
    }
    at.types.add(type);
    (rounds[at.round] ??= []).push(item);
  }
  return rounds;
}
