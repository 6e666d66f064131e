import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PermanentRecordError } from "../../src/errors.js";
import { ledgerChecksum } from "../../src/projections/ledger/checksum.js";
import { decodeLedgerEvent } from "../../src/projections/ledger/events.js";
import {
  generateLedgerStream,
  PAD_FIELD,
  type OutgoingRecord,
} from "../../src/projections/ledger/generate.js";
import type { KafkaRecord } from "../../src/record.js";

const rec = (type: string, value: unknown): KafkaRecord => ({
  topic: "t",
  partition: 0,
  offset: "0",
  timestamp: "0",
  key: null,
  value: Buffer.from(typeof value === "string" ? value : JSON.stringify(value)),
  headers: { ce_specversion: [Buffer.from("1.0")], ce_id: [Buffer.from("x")], ce_type: [Buffer.from(type)] },
});

describe("decodeLedgerEvent", () => {
  it("decodes the four event types", () => {
    expect(decodeLedgerEvent(rec("ledger.account.credited", { account: "a", amount: 5 }))).toEqual({
      type: "ledger.account.credited",
      account: "a",
      amount: 5,
    });
    expect(
      decodeLedgerEvent(rec("ledger.order.shipped", { order: "o", shipped_at: "2026-01-01T00:00:00Z" })),
    ).toEqual({
      type: "ledger.order.shipped",
      order: "o",
      shippedAt: new Date("2026-01-01T00:00:00Z"),
    });
  });

  it.each([
    ["ledger.account.credited", { account: "a", amount: 0 }, /field amount must be a positive whole number/],
    ["ledger.account.credited", { account: "a", amount: -3 }, /field amount/],
    ["ledger.account.debited", { account: "a", amount: 2 ** 53 }, /below 2\^53/],
    ["ledger.account.debited", { account: "a", amount: "5" }, /field amount/],
    ["ledger.account.credited", { amount: 5 }, /field account must be a non-empty string/],
    ["ledger.order.shipped", { order: "o", shipped_at: "yesterday" }, /field shipped_at must be an ISO-8601/],
    ["ledger.nope", { account: "a", amount: 1 }, /header ce_type "ledger.nope" is not one of/],
    ["ledger.account.credited", '{"account": "a", "amount"', /value is not JSON/],
    ["ledger.account.credited", "[1]", /value must be a JSON object/],
  ])("refuses %s %j with a message naming the field", (type, value, message) => {
    expect(() => decodeLedgerEvent(rec(type, value))).toThrow(PermanentRecordError);
    expect(() => decodeLedgerEvent(rec(type, value))).toThrow(message);
  });
});

describe("generateLedgerStream", () => {
  it("gives the same records for a seed as it always did (pinned: the benchmarks' and the soak's streams depend on it)", () => {
    const s = generateLedgerStream({ count: 2000, duplicateRate: 0.1, seed: 7, valueBytes: 300 });
    expect(createHash("sha256").update(JSON.stringify(s.records)).digest("hex")).toBe(
      "622d8509328c4ad7f6b0d4a8153543cfba402446f2927b9d395ac595629e02bf",
    );
    expect([s.events, s.duplicates]).toEqual([1803, 197]);
    expect(s.checksum).toBe("eaef4b30135728d58629690ce76acca3d61816ab2810e03fb03765017f010fce");
    expect(s.everyRecordChecksum).toBe("3706574b95ff2638c034df55ea4f50a53902b02722b58d47e5debc346b825b75");
  });

  it("is deterministic for a seed and counts its duplicates", () => {
    const a = generateLedgerStream({ count: 500, duplicateRate: 0.1, seed: 5 });
    const b = generateLedgerStream({ count: 500, duplicateRate: 0.1, seed: 5 });
    expect(a.records).toEqual(b.records);
    expect(a.checksum).toBe(b.checksum);
    expect(a.records).toHaveLength(500);
    expect(a.events + a.duplicates).toBe(500);
    expect(a.duplicates).toBeGreaterThan(20);
    const ids = new Set(a.records.map((r) => r.headers.ce_id));
    expect(ids.size).toBe(a.events);
  });

  it("checksums state independently of insertion order, ignoring zero balances", () => {
    const one = ledgerChecksum({
      balances: new Map([
        ["a", 1n],
        ["b", 0n],
      ]),
      orders: new Map([["o", "paid"]]),
    });
    const two = ledgerChecksum({ balances: new Map([["a", 1n]]), orders: new Map([["o", "paid"]]) });
    expect(one).toBe(two);
    expect(ledgerChecksum({ balances: new Map([["a", 2n]]), orders: new Map() })).not.toBe(two);
  });
});

describe("decodeLedgerEvent and unstorable text", () => {
  it("dead-letters an account with a lone surrogate instead of merging it into U+FFFD", () => {
    expect(() =>
      decodeLedgerEvent(rec("ledger.account.credited", '{"account":"acc-\\ud800","amount":13}')),
    ).toThrow(/field account holds a lone UTF-16 surrogate/);
  });
});

/** The record the consumer would read for an outgoing ledger record. */
const incoming = (r: OutgoingRecord): KafkaRecord => ({
  topic: "t",
  partition: 0,
  offset: "0",
  timestamp: "0",
  key: Buffer.from(r.key),
  value: Buffer.from(r.value),
  headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, [Buffer.from(v)]])),
});

describe("generateLedgerStream with padded values", () => {
  const options = { count: 2000, duplicateRate: 0.05, seed: 9 };
  const plain = generateLedgerStream(options);

  it.each([200, 700, 4096])("pads every value to %i bytes without changing events or checksums", (bytes) => {
    const padded = generateLedgerStream({ ...options, valueBytes: bytes });
    expect(padded.records.map((r) => Buffer.byteLength(r.value))).toEqual(padded.records.map(() => bytes));
    expect(padded.checksum).toBe(plain.checksum);
    expect(padded.everyRecordChecksum).toBe(plain.everyRecordChecksum);
    expect(padded.records.map((r) => r.headers)).toEqual(plain.records.map((r) => r.headers));
    expect(padded.records.map((r) => decodeLedgerEvent(incoming(r)))).toEqual(
      plain.records.map((r) => decodeLedgerEvent(incoming(r))),
    );
    expect(JSON.parse(padded.records[0]!.value)).toHaveProperty(PAD_FIELD);
  });

  it("leaves a value that is already long enough as it is", () => {
    const padded = generateLedgerStream({ ...options, valueBytes: 20 });
    expect(padded.records.map((r) => r.value)).toEqual(plain.records.map((r) => r.value));
  });
});

describe("generateLedgerStream's every-record checksum (offset dedupe)", () => {
  /** Applies every record in order as the ledger's SQL does, re-sent ones too. */
  function applyEveryRecord(records: readonly OutgoingRecord[]): string {
    const balances = new Map<string, bigint>();
    const orders = new Map<string, "paid" | "shipped">();
    for (const r of records) {
      const event = decodeLedgerEvent(incoming(r));
      switch (event.type) {
        case "ledger.account.credited":
        case "ledger.account.debited": {
          const delta = BigInt(event.type === "ledger.account.credited" ? event.amount : -event.amount);
          balances.set(event.account, (balances.get(event.account) ?? 0n) + delta);
          break;
        }
        case "ledger.order.paid":
          if (orders.get(event.order) !== "shipped") orders.set(event.order, "paid");
          break;
        case "ledger.order.shipped":
          if (orders.get(event.order) === "paid") orders.set(event.order, "shipped");
      }
    }
    return ledgerChecksum({ balances, orders });
  }

  it("is the state of applying every record, and differs from the deduplicated one when credits are re-sent", () => {
    const stream = generateLedgerStream({ count: 3000, duplicateRate: 0.05, seed: 4, valueBytes: 300 });
    expect(stream.everyRecordChecksum).toBe(applyEveryRecord(stream.records));
    expect(stream.everyRecordChecksum).not.toBe(stream.checksum);
  });

  it("equals the deduplicated checksum without re-sent records", () => {
    const stream = generateLedgerStream({ count: 1000, duplicateRate: 0, seed: 4 });
    expect(stream.everyRecordChecksum).toBe(stream.checksum);
  });
});
