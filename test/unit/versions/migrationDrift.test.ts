import { describe, expect, it } from "vitest";
import { describeApplied, migrationDrift } from "../../../src/versions/migrationDrift.js";

const m0 = { tag: "0000_step", when: "1767225600000", hash: "a".repeat(64) };
const m1 = { tag: "0001_step", when: "1767225601000", hash: "b".repeat(64) };
const applied = (m: { when: string; hash: string }) => ({ createdAt: m.when, hash: m.hash });

describe("migrationDrift", () => {
  it("finds nothing when the version has exactly the code's migrations", () => {
    expect(migrationDrift([m0, m1], [applied(m0), applied(m1)])).toEqual({ missing: [], unknown: [] });
    expect(migrationDrift([], [])).toEqual({ missing: [], unknown: [] });
  });

  it("names the code's migrations the version lacks, in journal order", () => {
    expect(migrationDrift([m0, m1], [applied(m0)])).toEqual({ missing: [m1], unknown: [] });
    expect(migrationDrift([m0, m1], [])).toEqual({ missing: [m0, m1], unknown: [] });
  });

  it("names the version's migrations the code does not know (older code)", () => {
    expect(migrationDrift([m0], [applied(m0), applied(m1)])).toEqual({
      missing: [],
      unknown: [applied(m1)],
    });
  });

  it("counts a migration edited after it was applied (same when, other hash) in both lists", () => {
    const edited = { ...m1, hash: "c".repeat(64) };
    expect(migrationDrift([m0, edited], [applied(m0), applied(m1)])).toEqual({
      missing: [edited],
      unknown: [applied(m1)],
    });
  });

  it("does not match a migration of the same content at another when", () => {
    const moved = { ...m1, when: "1767225602000" };
    expect(migrationDrift([m0, moved], [applied(m0), applied(m1)]).missing).toEqual([moved]);
  });

  it("describes an applied migration by its when and the start of its hash", () => {
    expect(describeApplied(applied(m1))).toBe("when 1767225601000 (hash bbbbbbbbbbbb)");
  });
});
