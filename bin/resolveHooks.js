// A module resolve hook that saves every `replayable` process 0.5 to 1.5 s of CPU at start on
// Node.js 22 to 26 (docs/benchmarks.md "Start-up: drizzle-orm's exports map").
//
// Why: for each module it resolves, Node.js's default resolve looks up the format of the package
// the module is in (getPackageScopeConfig in lib/internal/modules/package_json_reader.js). That
// lookup copies the package.json data with an object spread, which runs the lazy `exports` getter:
// drizzle-orm's exports map (447 entries, ~150 kB of JSON) is parsed again for each of the ~300
// modules `drizzle-orm/pg-core` and `drizzle-orm/node-postgres` load. Node.js 20 parses it once.
//
// What: an `import` of a plain relative `.js` path (`./a/b.js`, `../c.js`: no `%`, `?` or `#`)
// made by a module of one of PACKAGES resolves here to what the default resolve gives, URL and
// format "module", when all of these hold: the package's package.json says `"type": "module"`;
// the file's real path (symlinks followed, as the default does) is a regular file inside the same
// package, not under a nested node_modules, and no package.json lies between it and the package's
// root. Everything else (a missing file, a directory, another package's scope, `require`, a process
// run with --preserve-symlinks) goes to the default resolve, with its errors.
//
// Must run before the module graph that imports drizzle-orm is loaded (imports are resolved before
// any module of a graph runs): bin/replayable.js imports it first, the tests with `--import`.
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import module from "node:module";
import { dirname, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Packages whose own relative imports skip the per-module package.json lookup. */
const PACKAGES = ["drizzle-orm"];

/** A relative path to a `.js` file, without percent-encoding, query or fragment. */
const PLAIN_RELATIVE_JS = /^\.\.?\/[\w./-]*\.js$/;

/** Per package root (a real path ending in the separator): whether it is `"type": "module"`. */
const modulePackages = new Map();

/** Per directory inside a package root: whether the root's package.json is its nearest. */
const rootScoped = new Map();

/** Per package root URL: its real path, ending in the separator (null: none). */
const realRoots = new Map();

/** The real path of the package root (ending in the separator) `url` is in, else undefined. */
function packageRoot(url) {
  for (const name of PACKAGES) {
    const marker = `/node_modules/${name}/`;
    const at = url.lastIndexOf(marker);
    if (at === -1) continue;
    const rootUrl = url.slice(0, at + marker.length);
    let real = realRoots.get(rootUrl);
    if (real === undefined) {
      try {
        real = realpathSync(fileURLToPath(rootUrl)) + sep;
      } catch {
        real = null;
      }
      realRoots.set(rootUrl, real);
    }
    return real ?? undefined;
  }
  return undefined;
}

function isModulePackage(root) {
  let known = modulePackages.get(root);
  if (known === undefined) {
    try {
      known = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).type === "module";
    } catch {
      known = false;
    }
    modulePackages.set(root, known);
  }
  return known;
}

/** Whether `dir` (inside `root`) has no package.json between it and `root`. */
function inRootScope(dir, root) {
  if (dir + sep === root) return true;
  let known = rootScoped.get(dir);
  if (known === undefined) {
    known = !existsSync(join(dir, "package.json")) && inRootScope(dirname(dir), root);
    rootScoped.set(dir, known);
  }
  return known;
}

/** The file URL the default resolve gives `specifier` from `parent`, when the rules above hold. */
function ownModule(specifier, parent) {
  const root = packageRoot(parent);
  if (root === undefined || !isModulePackage(root)) return undefined;
  let file;
  try {
    file = realpathSync(fileURLToPath(new URL(specifier, parent)));
  } catch {
    return undefined;
  }
  if (!file.startsWith(root) || file.slice(root.length).split(sep).includes("node_modules")) return undefined;
  if (!inRootScope(dirname(file), root) || !statSync(file).isFile()) return undefined;
  return pathToFileURL(file).href;
}

const preserveSymlinks =
  process.execArgv.includes("--preserve-symlinks") ||
  (process.env.NODE_OPTIONS ?? "").includes("--preserve-symlinks") ||
  process.env.NODE_PRESERVE_SYMLINKS === "1";

// module.registerHooks: Node.js >= 22.15 (package.json "engines"); in-thread, synchronous.
if (typeof module.registerHooks === "function" && !preserveSymlinks) {
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (
        parent !== undefined &&
        parent.startsWith("file:") &&
        PLAIN_RELATIVE_JS.test(specifier) &&
        !context.conditions.includes("require")
      ) {
        const url = ownModule(specifier, parent);
        if (url !== undefined) return { url, format: "module", shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
  });
}
