/**
 * A synthetic, seeded ledger stream for demos, tests and benchmarks, with re-sent duplicates
 * (same `ce_id`, same bytes, a new offset) as a producer retrying after a timeout would make.
 */
import { seededRandom } from "../../support/random.js";
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
  const stream = new StreamBuilder(options);
  while (stream.records.length < options.count) {
    if (stream.records.length > 0 && stream.random() < options.duplicateRate) {
      stream.resendAnEarlierRecord();
      continue;
    }
    const roll = stream.random();
    if (roll < 0.6 || stream.noOrderYet) stream.creditOrDebit(roll < 0.4 || stream.noOrderYet);
    else if (roll < 0.85 || !stream.hasUnshippedOrder) stream.payAnOrder();
    else stream.shipAnOrder();
  }
  return stream.result();
}

/**
 * The state {@link generateLedgerStream} keeps while it writes records: the records, what applying
 * each distinct event once gives, and what applying every record gives. Each step draws from the
 * seeded random source in a fixed order, so a seed always gives the same stream.
 */
class StreamBuilder {
  readonly random: () => number;
  readonly records: OutgoingRecord[] = [];
  private readonly accountCount: number;
  private readonly prefix: string;
  private readonly balances = new Map<string, bigint>();
  private readonly everyRecordBalances = new Map<string, bigint>();
  /** Per record: the account and signed amount of a credit or debit, undefined for an order event. */
  private readonly deltas: ([string, bigint] | undefined)[] = [];
  private readonly orders = new Map<string, "paid" | "shipped">();
  private readonly unshipped: string[] = [];
  private events = 0;
  private duplicates = 0;
  private orderSeq = 0;
  private readonly baseTime = Date.UTC(2026, 0, 1);

  constructor(private readonly options: LedgerStreamOptions) {
    this.random = seededRandom(options.seed);
    this.accountCount = options.accounts ?? 50;
    this.prefix = options.idPrefix ?? `ledger-${options.seed}-`;
  }

  /** True until the first credit made the order numbers start (the stream begins with a credit). */
  get noOrderYet(): boolean {
    return this.orderSeq === 0;
  }

  get hasUnshippedOrder(): boolean {
    return this.unshipped.length > 0;
  }

  /** A producer's retry: an earlier record again, same bytes; it counts again only by offset. */
  resendAnEarlierRecord(): void {
    const resent = this.pick(this.records.length);
    this.records.push(this.records[resent]!);
    const delta = this.deltas[resent];
    this.deltas.push(delta);
    if (delta !== undefined) addTo(this.everyRecordBalances, delta);
    this.duplicates += 1;
  }

  /** A credit (`credited`) or a debit of a random account. */
  creditOrDebit(credited: boolean): void {
    const n = this.newEvent();
    const account = `acc-${this.pick(this.accountCount)}`;
    const amount = 1 + this.pick(100_000);
    const delta: [string, bigint] = [account, BigInt(credited ? amount : -amount)];
    addTo(this.balances, delta);
    addTo(this.everyRecordBalances, delta);
    this.deltas[this.deltas.length - 1] = delta;
    const type = credited ? "ledger.account.credited" : "ledger.account.debited";
    this.records.push(this.record(n, account, { type, account, amount }));
    if (this.orderSeq === 0) this.orderSeq = 1;
  }

  /** A new order, paid by a random account. */
  payAnOrder(): void {
    const n = this.newEvent();
    const order = `ord-${this.options.seed}-${this.orderSeq++}`;
    this.orders.set(order, "paid");
    this.unshipped.push(order);
    const account = `acc-${this.pick(this.accountCount)}`;
    const amount = 1 + this.pick(50_000);
    this.records.push(this.record(n, order, { type: "ledger.order.paid", order, account, amount }));
  }

  /** A random paid order, shipped. */
  shipAnOrder(): void {
    const n = this.newEvent();
    const order = this.unshipped.splice(this.pick(this.unshipped.length), 1)[0]!;
    this.orders.set(order, "shipped");
    const shippedAt = new Date(this.baseTime + n * 1000);
    this.records.push(this.record(n, order, { type: "ledger.order.shipped", order, shippedAt }));
  }

  result(): LedgerStream {
    const { records, events, duplicates, balances, everyRecordBalances, orders } = this;
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

  /** The next event's number; its record is not a re-send. */
  private newEvent(): number {
    this.deltas.push(undefined);
    return this.events++;
  }

  private pick(n: number): number {
    return Math.floor(this.random() * n);
  }

  private record(n: number, key: string, event: LedgerEvent): OutgoingRecord {
    return ledgerRecord(`${this.prefix}${n}`, key, event, this.options.valueBytes);
  }
}

function addTo(balances: Map<string, bigint>, [account, delta]: [string, bigint]): void {
  balances.set(account, (balances.get(account) ?? 0n) + delta);
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
