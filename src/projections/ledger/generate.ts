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
  /**
   * Pad every JSON value to this many bytes with a string field {@link PAD_FIELD} the ledger's decode
   * ignores (the checksums do not change); a value that is already this long or longer, or too close
   * to it for the field to fit (9 bytes at least), stays as it is. Default: no padding.
   */
  readonly valueBytes?: number;
}

/** Name of the padding field of {@link LedgerStreamOptions.valueBytes}; no ledger event has it. */
export const PAD_FIELD = "pad";

/** The stream and what applying each distinct event once must give. */
export interface LedgerStream {
  readonly records: OutgoingRecord[];
  /** Distinct events (records minus duplicates). */
  readonly events: number;
  readonly duplicates: number;
  readonly expected: LedgerState;
  readonly checksum: string;
  /**
   * The state when every record is applied, re-sent ones too, in offset order: what a projection
   * deduplicated by offset (`dedupe: { kind: "offset" }`) must give, as a re-send is a new offset.
   * A re-sent credit or debit counts again; a re-sent order event changes nothing (paid again while
   * paid sets the same values, paid after shipped and shipped again match no row).
   */
  readonly everyRecordExpected: LedgerState;
  /** {@link ledgerChecksum} of {@link everyRecordExpected}. */
  readonly everyRecordChecksum: string;
}

/** Generates `count` ledger records, the same for the same options. */
export function generateLedgerStream(options: LedgerStreamOptions): LedgerStream {
  const random = seededRandom(options.seed);
  const accountCount = options.accounts ?? 50;
  const prefix = options.idPrefix ?? `ledger-${options.seed}-`;
  const pick = (n: number) => Math.floor(random() * n);
  const balances = new Map<string, bigint>();
  const everyRecordBalances = new Map<string, bigint>();
  // Per record: the account and signed amount of a credit or debit, undefined for an order event.
  const deltas: ([string, bigint] | undefined)[] = [];
  const credit = (into: Map<string, bigint>, [account, delta]: [string, bigint]) =>
    into.set(account, (into.get(account) ?? 0n) + delta);
  const orders = new Map<string, "paid" | "shipped">();
  const records: OutgoingRecord[] = [];
  const unshipped: string[] = [];
  let events = 0;
  let duplicates = 0;
  let orderSeq = 0;
  const baseTime = Date.UTC(2026, 0, 1);

  const toRecord = (n: number, key: string, event: LedgerEvent) =>
    ledgerRecord(`${prefix}${n}`, key, event, options.valueBytes);

  while (records.length < options.count) {
    if (records.length > 0 && random() < options.duplicateRate) {
      const resent = pick(records.length);
      records.push(records[resent]!);
      deltas.push(deltas[resent]);
      if (deltas[resent] !== undefined) credit(everyRecordBalances, deltas[resent]);
      duplicates += 1;
      continue;
    }
    deltas.push(undefined);
    const n = events++;
    const roll = random();
    if (roll < 0.6 || orderSeq === 0) {
      const account = `acc-${pick(accountCount)}`;
      const credited = roll < 0.4 || orderSeq === 0;
      const amount = 1 + pick(100_000);
      const delta: [string, bigint] = [account, BigInt(credited ? amount : -amount)];
      credit(balances, delta);
      credit(everyRecordBalances, delta);
      deltas[deltas.length - 1] = delta;
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
  const everyRecordExpected = { balances: everyRecordBalances, orders };
  return {
    records,
    events,
    duplicates,
    expected,
    checksum: ledgerChecksum(expected),
    everyRecordExpected,
    everyRecordChecksum: ledgerChecksum(everyRecordExpected),
  };
}

/**
 * The record of one event: its key, its JSON value (padded to `valueBytes`, see
 * {@link LedgerStreamOptions.valueBytes}), and CloudEvents headers with `ce_id` = `id`.
 */
function ledgerRecord(id: string, key: string, event: LedgerEvent, valueBytes?: number): OutgoingRecord {
  const { type, ...data } = event;
  const value =
    event.type === "ledger.order.shipped"
      ? { order: event.order, shipped_at: event.shippedAt.toISOString() }
      : data;
  return {
    key,
    value: padJson(JSON.stringify(value), valueBytes),
    headers: { ce_specversion: "1.0", ce_id: id, ce_source: "/replayable/produce", ce_type: type },
  };
}

/**
 * `json` (a JSON object's text, ASCII) with a last field `"pad":"xx…"` that makes it `bytes` long;
 * `json` itself when no padding is asked or the field (at least 9 bytes: `,"pad":""`) does not fit.
 */
function padJson(json: string, bytes: number | undefined): string {
  const room = bytes === undefined ? -1 : bytes - Buffer.byteLength(json) - `,"${PAD_FIELD}":""`.length;
  if (room < 0) return json;
  return `${json.slice(0, -1)},"${PAD_FIELD}":"${"x".repeat(room)}"}`;
}
