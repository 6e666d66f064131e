import { describe, expect, it } from "vitest";
import { parseConfigFile } from "../../../src/configFile/parseConfigFile.js";
import type { Projection } from "../../../src/projection.js";
import {
  baseTable,
  parseVersion,
  versionedInstance,
  versionedTableProblems,
  versionGroup,
  versionKey,
  versionSchema,
} from "../../../src/versions/versionNames.js";

describe("blue/green version names", () => {
  it("names a version's schema, dedupe key and group", () => {
    expect(versionSchema("github", 2)).toBe("github_v2");
    expect(versionKey("github", 2)).toBe("github@v2");
    expect(versionGroup("github-prod", 3)).toBe("github-prod-v3");
    expect(baseTable("github.github_repo_activity")).toBe("github_repo_activity");
    expect(baseTable("plain")).toBe("plain");
  });

  it("parses --version as a whole number from 1", () => {
    expect(parseVersion("1")).toBe(1);
    expect(parseVersion("12")).toBe(12);
    for (const bad of ["0", "-1", "1.5", "v2", "", "01"])
      expect(() => parseVersion(bad)).toThrow(/--version: must be a version number/);
  });

  it("requires a versioned projection's tables in the schema named like it", () => {
    expect(versionedTableProblems("sales", ["sales.totals", "sales.shops"])).toEqual([]);
    expect(versionedTableProblems("sales", ["other.totals", "totals"])).toEqual([
      "tables: other.totals: a versioned projection's tables are named sales.<table> (the stable names readers use; each version keeps them in schema sales_v<N>)",
      "tables: totals: a versioned projection's tables are named sales.<table> (the stable names readers use; each version keeps them in schema sales_v<N>)",
    ]);
  });

  it("runs a version under its key, its tables in its schema, with search_path set to it", async () => {
    const seen: string[] = [];
    const projection: Projection<unknown> = {
      name: "sales",
      dedupe: { kind: "offset" },
      defaultTopics: ["sales"],
      tables: ["sales.totals"],
      decode: (record) => record.offset,
      apply: () => {
        seen.push("apply");
        return Promise.resolve();
      },
    };
    const instance = versionedInstance(projection, 3);
    expect(instance).toMatchObject({
      name: "sales@v3",
      baseName: "sales",
      version: 3,
      tables: ["sales_v3.totals"],
      searchPath: "sales_v3",
      defaultTopics: ["sales"],
    });
    await instance.apply({} as never, {} as never);
    expect(seen).toEqual(["apply"]);
    expect(projection.name).toBe("sales");
  });
});

describe("versioned in the config file", () => {
  const entry = (fields: Record<string, unknown>) => ({
    name: "sales",
    dedupe: { kind: "offset" },
    topics: ["sales"],
    tables: ["sales.totals"],
    decode: () => 1,
    apply: async () => {},
    ...fields,
  });

  it("accepts versioned: true with tables in schema sales, and keeps plain projections as they were", () => {
    const parsed = parseConfigFile("/app/replayable.config.ts", {
      projections: [entry({ versioned: true }), entry({ name: "plain", tables: ["x.y"] })],
    });
    expect(parsed.problems).toEqual([]);
    expect(parsed.projections.map((p) => [p.name, p.versioned])).toEqual([
      ["sales", true],
      ["plain", undefined],
    ]);
  });

  it("refuses versioned tables outside the projection's schema and a versioned that is not a boolean", () => {
    const parsed = parseConfigFile("/app/replayable.config.ts", {
      projections: [
        entry({ versioned: true, tables: ["shop.totals"] }),
        entry({ name: "b", versioned: "yes" }),
      ],
    });
    expect(parsed.problems).toEqual([
      "  replayable.config.ts: projections[0] (sales): tables: shop.totals: a versioned projection's tables are named sales.<table> (the stable names readers use; each version keeps them in schema sales_v<N>)",
      "  replayable.config.ts: projections[1] (b): versioned: must be true or false",
    ]);
  });
});
