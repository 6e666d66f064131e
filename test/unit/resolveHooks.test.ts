/**
 * bin/resolveHooks.js: drizzle-orm's own relative imports resolve to the same URL and format as
 * with Node.js's default resolve, without reaching it (the per-module package.json lookup that
 * parses drizzle-orm's exports map each time). A child process per case: hooks are per process.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../fixtures/resolveHooks/importDrizzle.mjs", import.meta.url));

interface Seen {
  resolved: [string, string | null][];
  passedOn: string[];
}

function importDrizzle(withHook: boolean): Seen {
  const out = execFileSync(process.execPath, [SCRIPT], {
    env: { ...process.env, WITH_HOOK: withHook ? "1" : "0" },
    encoding: "utf8",
  });
  return JSON.parse(out) as Seen;
}

describe("bin/resolveHooks.js", () => {
  it("resolves drizzle-orm's modules to the URLs and formats the default resolve gives", () => {
    const without = importDrizzle(false);
    const within = importDrizzle(true);
    const drizzle = (s: Seen) => s.resolved.filter(([url]) => url.includes("/node_modules/drizzle-orm/"));
    expect(drizzle(without).length).toBeGreaterThan(100);
    expect(new Set(drizzle(without).map(([, format]) => format))).toEqual(new Set(["module"]));
    expect(drizzle(within).sort()).toEqual(drizzle(without).sort());
  });

  it("answers drizzle-orm's relative imports itself: none reaches the default resolve", () => {
    expect(importDrizzle(false).passedOn.length).toBeGreaterThan(100);
    expect(importDrizzle(true).passedOn).toEqual([]);
  });
});
