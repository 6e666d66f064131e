/** Locating files shipped with the package (migrations), from src/ under tsx or dist/src/ when built. */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The folder holding this package's package.json.
 * @throws Error when no package.json is found above this module (a broken install).
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "drizzle"))) return dir;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error("replayable: cannot find the package root (package.json and drizzle/)");
    dir = parent;
  }
}
