/**
 * Loads a config file with jiti (TypeScript and ESM without a build step). Inside the file,
 * `import ... from "replayable"` resolves to the very package that runs the CLI, so the file and
 * the CLI always agree on the API, even where the file's folder has no node_modules.
 *
 * jiti's file cache is off (`fsCache: false`): without a node_modules folder next to this module
 * it keeps compiled code in the shared temp folder (`$TMPDIR/jiti`) and runs any file there whose
 * trailer matches the source's hash, so another local user who pre-creates that folder could plant
 * code that runs as the operator (issue 26 item 8, docs/security.md "The config file"). A config
 * file is compiled once per process, so the cache saves little.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createJiti } from "jiti";
import { errorMessage } from "../errors.js";

/** The package's public entry point, as TypeScript in a checkout or compiled JavaScript when installed. */
function packageEntry(): string {
  for (const name of ["../index.ts", "../index.js"]) {
    const path = fileURLToPath(new URL(name, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error("replayable: cannot find the package's index (src/index.ts or dist/src/index.js)");
}

/** The file's default export, or the reason it could not be loaded (a syntax error, a failing import). */
export async function importConfigFile(
  path: string,
): Promise<
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string }
> {
  const jiti = createJiti(import.meta.url, {
    alias: { replayable: packageEntry() },
    moduleCache: false,
    fsCache: false,
    interopDefault: false,
  });
  try {
    const module = await jiti.import<Record<string, unknown>>(path);
    if (
      module === null ||
      typeof module !== "object" ||
      !("default" in module) ||
      module.default === undefined
    )
      return {
        ok: false,
        problem: "has no default export; end it with `export default defineConfig({ ... })`",
      };
    return { ok: true, value: module.default };
  } catch (error) {
    return { ok: false, problem: `cannot be loaded: ${errorMessage(error)}` };
  }
}
