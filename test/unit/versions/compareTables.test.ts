/**
 * The table comparison of `migrate --convert-to-versioned` (src/versions/convertToVersioned.ts):
 * every difference between the existing tables and those the versioned migrations make is named,
 * and equal shapes give none.
 */
import { describe, expect, it } from "vitest";
import { compareTables } from "../../../src/versions/convertToVersioned.js";

const totals = {
  columns: ["shop text NOT NULL", "sales bigint NOT NULL"],
  indexes: ["CREATE UNIQUE INDEX ON t USING btree (shop)"],
  constraints: ["PRIMARY KEY (shop)"],
};

describe("compareTables", () => {
  it("finds no difference between equal shapes", () => {
    expect(compareTables(new Map([["totals", totals]]), new Map([["totals", { ...totals }]]))).toEqual([]);
  });

  it("names a table on one side only, a column list that differs, and each index or constraint on one side", () => {
    const existing = new Map([
      ["totals", totals],
      ["old", totals],
    ]);
    const made = new Map([
      [
        "totals",
        {
          columns: ["shop text NOT NULL", "sales integer NOT NULL"],
          indexes: [],
          constraints: ["PRIMARY KEY (shop)", "CHECK ((sales >= 0))"],
        },
      ],
      ["new", totals],
    ]);
    expect(compareTables(existing, made)).toEqual([
      "table new: made by the migrations, not in the existing schema",
      "table old: in the existing schema, not made by the migrations",
      "table totals: columns (shop text NOT NULL, sales bigint NOT NULL) exist, the migrations make (shop text NOT NULL, sales integer NOT NULL)",
      "table totals: index CREATE UNIQUE INDEX ON t USING btree (shop) exists, the migrations do not make it",
      "table totals: the migrations make constraint CHECK ((sales >= 0)), which does not exist",
    ]);
  });
});
