import { describe, expect, it } from "vitest";
import { planUpsertRounds } from "../../../src/projections/upsert/applyUpsertBatch.js";
import type { UpsertOperation } from "../../../src/projections/upsert/upsertOperation.js";

const write = (key: string, value: string): UpsertOperation => ({
  kind: "write",
  key: [key],
  values: [value],
});
const del = (key: string): UpsertOperation => ({ kind: "delete", key: [key] });

describe("planUpsertRounds", () => {
  it("puts a batch of distinct keys in one round", () => {
    const ops = [write("a", "1"), del("b"), write("c", "2")];
    expect(planUpsertRounds(ops)).toEqual([
      { deletes: [del("b")], writes: [write("a", "1"), write("c", "2")] },
    ]);
  });

  it("puts the n-th record of each key in round n, so each key's records keep their offset order", () => {
    const ops = [del("a"), write("b", "1"), write("a", "2"), write("b", "3"), del("b"), write("a", "4")];
    expect(planUpsertRounds(ops)).toEqual([
      { deletes: [del("a")], writes: [write("b", "1")] },
      { deletes: [], writes: [write("a", "2"), write("b", "3")] },
      { deletes: [del("b")], writes: [write("a", "4")] },
    ]);
  });

  it("regression: keys that differ only by trailing spaces (one row in a varchar(n) column) keep their offset order", () => {
    const ops = [write("abc ", "1"), del("abc"), write("abc  ", "2")];
    expect(planUpsertRounds(ops)).toEqual([
      { deletes: [], writes: [write("abc ", "1")] },
      { deletes: [del("abc")], writes: [] },
      { deletes: [], writes: [write("abc  ", "2")] },
    ]);
  });

  it("tells composite keys apart by every part", () => {
    const ops: UpsertOperation[] = [
      { kind: "write", key: ["a", "b"], values: [] },
      { kind: "write", key: ["a,b", ""], values: [] },
    ];
    expect(planUpsertRounds(ops)).toHaveLength(1);
  });

  it("puts every write of a sink without a key in one round", () => {
    const ops: UpsertOperation[] = [
      { kind: "write", key: [], values: ["1"] },
      { kind: "write", key: [], values: ["1"] },
    ];
    expect(planUpsertRounds(ops)).toEqual([{ deletes: [], writes: ops }]);
  });
});
