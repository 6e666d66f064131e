/**
 * bin/resolveHooks.js: drizzle-orm's own relative imports resolve to the same URL and format as
 * with Node.js's default resolve, without reaching it (the per-module package.json lookup that
 * parses drizzle-orm's exports map each time). A child process per case: hooks are per process.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../fixtures/resolveHooks/importDrizzle.mjs", import.meta.url));
const HOOK = fileURLToPath(new URL("../../bin/resolveHooks.js", import.meta.url));

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

/**
 * A stand-in drizzle-orm package with the layouts the default resolve treats specially (break-it
 * review): a symlinked file (one module instance, under its real path), a sub-folder whose own
 * package.json says CommonJS, a package nested under its node_modules, and relative imports the
 * default refuses (a missing file, a directory, a percent-encoded slash). `probe.mjs` prints each
 * case's value or error code.
 */
function standInPackage(): string {
  const dir = mkdtempSync(join(tmpdir(), "rt_resolve_hooks_"));
  const pkg = join(dir, "node_modules", "drizzle-orm");
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(pkg, path)), { recursive: true });
    writeFileSync(join(pkg, path), text);
  };
  write("package.json", JSON.stringify({ name: "drizzle-orm", type: "module", main: "index.js" }));
  write("real/target.js", "export const instance = {};\n");
  symlinkSync(join(pkg, "real", "target.js"), join(pkg, "linked.js"));
  write("sub/package.json", JSON.stringify({ type: "commonjs" }));
  write("sub/c.js", "module.exports = 7;\n");
  write("node_modules/inner/package.json", JSON.stringify({ name: "inner" }));
  write("node_modules/inner/cjs.js", "module.exports = 42;\n");
  write("node_modules/inner/main.mjs", 'export { default } from "./cjs.js";\n');
  mkdirSync(join(pkg, "folder.js"));
  write(
    "index.js",
    `const code = (load) => load.then((m) => m.default ?? "loaded", (e) => e.code ?? e.name);
export async function cases() {
  const [linked, real] = [await import("./linked.js"), await import("./real/target.js")];
  return {
    symlink: linked.instance === real.instance ? "one instance" : "two instances",
    commonjsScope: await code(import("./sub/c.js")),
    nested: await code(import("./node_modules/inner/main.mjs")),
    missing: await code(import("./missing.js")),
    directory: await code(import("./folder.js")),
    encoded: await code(import("./sub%2Fc.js")),
  };
}
`,
  );
  writeFileSync(
    join(dir, "probe.mjs"),
    'const m = await import("drizzle-orm"); process.stdout.write(JSON.stringify(await m.cases()));\n',
  );
  return dir;
}

describe("bin/resolveHooks.js, a package laid out unusually", () => {
  it("regression: gives each case what the default resolve gives (break-it review: a symlinked file loaded twice, CommonJS forced to ESM, other error codes)", () => {
    const dir = standInPackage();
    try {
      const probe = (hook: string[]) =>
        JSON.parse(
          execFileSync(process.execPath, [...hook, join(dir, "probe.mjs")], { cwd: dir, encoding: "utf8" }),
        ) as Record<string, unknown>;
      const without = probe([]);
      expect(without).toEqual({
        symlink: "one instance",
        commonjsScope: 7,
        nested: 42,
        missing: "ERR_MODULE_NOT_FOUND",
        directory: "ERR_UNSUPPORTED_DIR_IMPORT",
        encoded: "ERR_INVALID_MODULE_SPECIFIER",
      });
      expect(probe(["--import", HOOK])).toEqual(without);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
