import { describe, expect, it } from "vitest";
import { formatTable, recordRows } from "../../src/text/textTable.js";

describe("formatTable", () => {
  it("aligns columns two spaces apart, as wide as their widest cell, without trailing spaces", () => {
    expect(
      formatTable(
        recordRows([
          { topic: "orders", partition: 0, lag: "" },
          { topic: "t", partition: 12, lag: "5" },
        ]),
      ),
    ).toEqual(["topic   partition  lag", "orders  0", "t       12         5"]);
  });

  it("puts a rule under the header, an indent before each line, and numbers right-aligned when asked", () => {
    expect(
      formatTable(
        [
          ["table", "rows"],
          ["a", 5],
          ["bb", 120],
        ],
        { indent: "  ", rule: true, numbersRight: true },
      ),
    ).toEqual(["  table  rows", "  -----  ----", "  a         5", "  bb      120"]);
  });

  it("has no lines for no rows", () => {
    expect(formatTable(recordRows([]))).toEqual([]);
  });
});
