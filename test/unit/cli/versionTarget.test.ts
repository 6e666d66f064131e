import type pg from "pg";
import { describe, expect, it } from "vitest";
import { resolveVersionTarget, versionLine } from "../../../src/cli/versionTarget.js";
import type { RegisteredProjection } from "../../../src/projections/registry.js";
import { versionedInstance } from "../../../src/versions/versionNames.js";

const plain = {
  name: "sales",
  origin: "config",
  tables: ["sales.totals"],
  defaultTopics: ["orders"],
  dedupe: { kind: "offset" },
  decode: () => undefined,
  apply: () => Promise.resolve(),
} as unknown as RegisteredProjection;

/** A pool no test here may reach: a plain projection never asks for its versions. */
const noDatabase = new Proxy(
  {},
  {
    get() {
      throw new Error("the database was queried");
    },
  },
) as pg.Pool;

describe("the --version option of replay, prune and dead-letters", () => {
  it("acts on a plain projection's own name and the given group, or the default", async () => {
    const target = await resolveVersionTarget(noDatabase, plain, undefined, "sales-prod", "sales");
    expect([target.projection.name, target.groupId, target.version]).toEqual([
      "sales",
      "sales-prod",
      undefined,
    ]);
    expect((await resolveVersionTarget(noDatabase, plain, undefined, undefined, "sales")).groupId).toBe(
      "sales",
    );
    expect(versionLine(target)).toBeUndefined();
  });

  it("refuses --version on a plain projection, naming the flag and the fix", async () => {
    await expect(resolveVersionTarget(noDatabase, plain, "2", undefined, "sales")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining(
        "--version: projection sales is not versioned (defineProjection({ versioned: true }) opts in to blue/green versions); leave out --version",
      ) as string,
    });
  });

  it("refuses a --version that is not a version number before asking the database", async () => {
    const versioned = { ...plain, versioned: true } as RegisteredProjection;
    await expect(resolveVersionTarget(noDatabase, versioned, "0", undefined, "sales")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining('--version: must be a version number (1, 2, ...), got "0"') as string,
    });
  });

  it("on a versioned projection without a version, names the migrate command that makes version 1", async () => {
    const versioned = { ...plain, versioned: true } as RegisteredProjection;
    const noVersions = { query: () => Promise.resolve({ rows: [], rowCount: 0 }) } as unknown as pg.Pool;
    await expect(
      resolveVersionTarget(noVersions, versioned, undefined, undefined, "sales"),
    ).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message:
        "projection sales is versioned but has no version yet: run `replayable migrate --projection sales` (it creates version 1)",
    });
  });

  it("says which version it acts on", () => {
    const line = versionLine({
      projection: versionedInstance(plain, 2),
      groupId: "sales-v2",
      version: { number: 2, state: "shadow", of: "sales" },
    });
    expect(line).toBe("Version 2 (shadow) of projection sales: dedupe key sales@v2, consumer group sales-v2");
  });
});
