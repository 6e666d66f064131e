import type pg from "pg";
import { describe, expect, it } from "vitest";
import { shownEta, versionsToShow } from "../../../src/cli/commands/status.js";
import type { Projection } from "../../../src/projection.js";

const sales = {
  name: "sales",
  versioned: true,
  tables: ["sales.totals"],
  defaultTopics: ["orders"],
  dedupe: { kind: "offset" },
  decode: () => undefined,
  apply: () => Promise.resolve(),
} as unknown as Projection<unknown>;

/** A pool whose registry holds `rows` for every projection asked about. */
function registry(rows: { version: number; state: string }[]): pg.Pool {
  const full = rows.map((r) => ({
    projection: "sales",
    schemaName: `sales_v${r.version}`,
    groupId: "sales",
    ...r,
  }));
  return { query: () => Promise.resolve({ rows: full, rowCount: full.length }) } as unknown as pg.Pool;
}

describe("status of a versioned projection", () => {
  it("without a version yet, names the migrate command that makes version 1 instead of printing empty tables", async () => {
    await expect(versionsToShow(registry([]), sales)).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message:
        "projection sales is versioned but has no version yet: run `replayable migrate --projection sales` (it creates version 1)",
    });
  });

  it("with every version dropped, says there is no live version and lists them", async () => {
    await expect(versionsToShow(registry([{ version: 1, state: "dropped" }]), sales)).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining("has no live version; its versions: 1 (dropped)") as string,
    });
  });

  it("shows the versions not dropped, by version", async () => {
    const rows = await versionsToShow(
      registry([
        { version: 1, state: "dropped" },
        { version: 2, state: "live" },
        { version: 3, state: "shadow" },
      ]),
      sales,
    );
    expect(rows.map((r) => [r.version, r.state])).toEqual([
      [2, "live"],
      [3, "shadow"],
    ]);
  });
});

describe("a version's ETA in status", () => {
  it("is not plainly 'caught up' when some of its topics were deleted", () => {
    expect(shownEta("caught up", ["orders"])).toBe("caught up on the topics that exist");
    expect(shownEta("caught up", [])).toBe("caught up");
    expect(shownEta("3m 20s", ["orders"])).toBe("3m 20s");
  });
});
