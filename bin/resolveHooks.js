// A module resolve hook that saves every `replayable` process 0.5 to 1.5 s of CPU at start on
// Node.js 22 to 26 (docs/benchmarks.md "Start-up: drizzle-orm's exports map").
//
// Why: for each module it resolves, Node.js's default resolve looks up the format of the package
// the module is in (getPackageScopeConfig in lib/internal/modules/package_json_reader.js). That
// lookup copies the package.json data with an object spread, which runs the lazy `exports` getter:
// drizzle-orm's exports map (447 entries, ~150 kB of JSON) is parsed again for each of the ~300
// modules `drizzle-orm/pg-core` and `drizzle-orm/node-postgres` load. Node.js 20 parses it once.
//
// What: a relative `.js` import made by a module of one of PACKAGES, an ES module package
// (`"type": "module"`, read once from its package.json), resolves to its URL with format "module",
// which is what the default resolve returns for it; every other import goes to the default. A file
// that does not exist then fails to load (ENOENT) instead of failing to resolve
// (ERR_MODULE_NOT_FOUND).
//
// Must run before the module graph that imports drizzle-orm is loaded (imports are resolved before
// any module of a graph runs): bin/replayable.js imports it first, the tests with `--import`.
import { readFileSync } from "node:fs";
import module from "node:module";

/** Packages whose own relative imports skip the per-module package.json lookup. */
const PACKAGES = ["drizzle-orm"];

/** Per package root URL: whether its package.json says `"type": "module"`. */
const isModulePackage = new Map();

/** The package root URL (ending in `/`) of `url` when it is in one of PACKAGES, else undefined. */
function packageRoot(url) {
  for (const name of PACKAGES) {
    const at = url.lastIndexOf(`/node_modules/${name}/`);
    if (at !== -1) return url.slice(0, at + `/node_modules/${name}/`.length);
  }
  return undefined;
}

function modulePackage(root) {
  let known = isModulePackage.get(root);
  if (known === undefined) {
    try {
      known = JSON.parse(readFileSync(new URL("package.json", root), "utf8")).type === "module";
    } catch {
      known = false;
    }
    isModulePackage.set(root, known);
  }
  return known;
}

// module.registerHooks: Node.js >= 22.15 (package.json "engines"); in-thread, synchronous.
if (typeof module.registerHooks === "function") {
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (
        parent !== undefined &&
        parent.startsWith("file:") &&
        (specifier.startsWith("./") || specifier.startsWith("../")) &&
        specifier.endsWith(".js") &&
        !context.conditions.includes("require")
      ) {
        const root = packageRoot(parent);
        if (root !== undefined && modulePackage(root)) {
          const url = new URL(specifier, parent).href;
          if (url.startsWith(root)) return { url, format: "module", shortCircuit: true };
        }
      }
      return nextResolve(specifier, context);
    },
  });
}
