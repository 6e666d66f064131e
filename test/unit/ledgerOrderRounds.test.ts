import { describe, expect, it } from "vitest";
import type { DecodedRecord } from "../../src/projection.js";
import { orderRounds } from "../../src/projections/ledger/applyLedgerBatch.js";
import type { LedgerEvent } from "../../src/projections/ledger/events.js";
import type { KafkaRecord } from "../../src/record.js";

type OrderEvent = Extract<LedgerEvent, { type: "ledger.order.paid" | "ledger.order.shipped" }>;

let offset = 0;
const record = (): KafkaRecord => ({
  topic: "t",
  partition: 0,
  offset: String(offset++),
  timestamp: "0",
  key: null,
  value: null,
  headers: {},
});
const paid = (order: string): DecodedRecord<OrderEvent> => ({
  record: record(),
  value: { type: "ledger.order.paid", order, account: "a", amount: 1 },
  eventId: undefined,
});
const shipped = (order: string): DecodedRecord<OrderEvent> => ({
  record: record(),
  value: { type: "ledger.order.shipped", order, shippedAt: new Date(0) },
  eventId: undefined,
});
const shape = (rounds: DecodedRecord<OrderEvent>[][]) =>
  rounds.map((round) => round.map((e) => `${e.value.type.slice(13)}:${e.value.order}`));

describe("orderRounds", () => {
  it("keeps paid-then-shipped of each order in one round", () => {
    expect(shape(orderRounds([paid("o1"), paid("o2"), shipped("o1"), shipped("o2")]))).toEqual([
      ["paid:o1", "paid:o2", "shipped:o1", "shipped:o2"],
    ]);
  });

  it("moves a re-sent paid of the same order to the next round", () => {
    expect(shape(orderRounds([paid("o1"), paid("o2"), paid("o1")]))).toEqual([
      ["paid:o1", "paid:o2"],
      ["paid:o1"],
    ]);
  });

  it("moves a paid that follows the order's shipped to the next round, and its later events with it", () => {
    expect(shape(orderRounds([paid("o1"), shipped("o1"), paid("o1"), shipped("o1"), paid("o2")]))).toEqual([
      ["paid:o1", "shipped:o1", "paid:o2"],
      ["paid:o1", "shipped:o1"],
    ]);
  });

  it("puts a paid after its order's shipped in a later round, as the round runs its paid first", () => {
    expect(shape(orderRounds([shipped("o1"), paid("o1"), shipped("o2")]))).toEqual([
      ["shipped:o1", "shipped:o2"],
      ["paid:o1"],
    ]);
  });

  it("gives every event of a batch exactly one round, in offset order within each", () => {
    const events = [paid("a"), paid("a"), shipped("a"), paid("b"), shipped("a"), shipped("b"), paid("a")];
    const rounds = orderRounds(events);
    expect(rounds.flat()).toHaveLength(events.length);
    expect(new Set(rounds.flat())).toEqual(new Set(events));
    for (const round of rounds) {
      const offsets = round.map((e) => BigInt(e.record.offset));
      expect([...offsets].sort((x, y) => (x < y ? -1 : 1))).toEqual(offsets);
    }
  });
});
