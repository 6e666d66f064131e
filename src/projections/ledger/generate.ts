/**
 * A synthetic, seeded ledger stream for demos, tests and benchmarks, with re-sent duplicates
 * (same `ce_id`, same bytes, a new offset) as a producer retrying after a timeout would make.
 */
import { seededRandom } from "../../random.js";
import type { LedgerEvent } from "./events.js";
import { ledgerChecksum, type LedgerState } from "./checksum.js";

/** A record to produce: key, JSON value and CloudEvents headers. */
export interface OutgoingRecord {
  readonly key: string;
  readonly value: string;
  readonly headers: Record<string, string>;
}

/** Options for {@link generateLedgerStream}. */
export interface LedgerStreamOptions {
  /** Records to produce in all, duplicates included. */
  readonly count: number;
  /** Fraction in [0, 1) of records that are re-sends of an earlier event. */
  readonly duplicateRate: number;
  readonly seed: number;
  /** Number of accounts; default 50. */
  readonly accounts?: number;
  /** Prefix of event ids, so two streams into one projection do not collide; default `ledger-<seed>-`. */
  readonly idPrefix?: string;
}

/** The stream and what applying each distinct event once must give. */
export interface LedgerStream {
  readonly records: OutgoingRecord[];
  /** Distinct events (records minus duplicates). */
  readonly events: number;
  readonly duplicates: number;
  readonly expected: LedgerState;
  readonly checksum: string;
}

/** Generates `count` ledger records, the same for the same options. */
export function generateLedgerStream(options: LedgerStreamOptions): LedgerStream {
  const random = seededRandom(options.seed);
  const accountCount = options.accounts ?? 50;
  const prefix = options.idPrefix ?? `ledger-${options.seed}-`;
  const pick = (n: number) => Math.floor(random() * n);
  const balances = new Map<string, bigint>();
  const orders = new Map<string, "paid" | "shipped">();
  const records: OutgoingRecord[] = [];
  const unshipped: string[] = [];
  let events = 0;
  let duplicates = 0;
  let orderSeq = 0;
  const baseTime = Date.UTC(2026, 0, 1);

  const toRecord = (n: number, key: string, event: LedgerEvent) => ledgerRecord(`${prefix}${n}`, key, event);

  while (records.length < options.count) {
    if (records.length > 0 && random() < options.duplicateRate) {
      records.push(records[pick(records.length)]!);
      duplicates += 1;
      continue;
    }
    const n = events++;
    const roll = random();
    if (roll < 0.6 || orderSeq === 0) {
      const account = `acc-${pick(accountCount)}`;
      const credited = roll < 0.4 || orderSeq === 0;
      const amount = 1 + pick(100_000);
      balances.set(account, (balances.get(account) ?? 0n) + BigInt(credited ? amount : -amount));
      records.push(
        toRecord(n, account, {
          type: credited ? "ledger.account.credited" : "ledger.account.debited",
          account,
          amount,
        }),
      );
      if (orderSeq === 0) orderSeq = 1;
    } else if (roll < 0.85 || unshipped.length === 0) {
      const order = `ord-${options.seed}-${orderSeq++}`;
      orders.set(order, "paid");
      unshipped.push(order);
      const account = `acc-${pick(accountCount)}`;
      records.push(
        toRecord(n, order, { type: "ledger.order.paid", order, account, amount: 1 + pick(50_000) }),
      );
    } else {
      const order = unshipped.splice(pick(unshipped.length), 1)[0]!;
      orders.set(order, "shipped");
      records.push(
        toRecord(n, order, { type: "ledger.order.shipped", order, shippedAt: new Date(baseTime + n * 1000) }),
      );
    }
  }
  const expected = { balances, orders };
  return { records, events, duplicates, expected, checksum: ledgerChecksum(expected) };
}

/** The record of one event: its key, its JSON value, and CloudEvents headers with `ce_id` = `id`. */
function ledgerRecord(id: string, key: string, event: LedgerEvent): OutgoingRecord {
  const { type, ...data } = event;
  const value =
    event.type === "ledger.order.shipped"
      ? { order: event.order, shipped_at: event.shippedAt.toISOString() }
      : data;
  return {
    key,
    value: JSON.stringify(value),
    headers: { ce_specversion: "1.0", ce_id: id, ce_source: "/replayable/produce", ce_type: type },
  };
}
