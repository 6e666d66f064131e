/**
 * Where the config file is: `--config <path>`, else REPLAYABLE_CONFIG, else the first of
 * {@link CONFIG_FILE_NAMES} in the working directory (as drizzle-kit, vitest and eslint look for theirs).
 */
import { existsSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";

/** The names looked for in the working directory, in this order. */
export const CONFIG_FILE_NAMES = [
  "replayable.config.ts",
  "replayable.config.mts",
  "replayable.config.js",
  "replayable.config.mjs",
] as const;

/** The config file to load, none, or why the named one cannot be used. */
export type ConfigFileLocation =
  | { readonly kind: "found"; readonly path: string }
  | { readonly kind: "none" }
  | { readonly kind: "missing"; readonly path: string; readonly setting: string };

/**
 * Finds the config file.
 * @param flag the `--config` flag; wins over `env.REPLAYABLE_CONFIG`.
 * @param cwd the working directory that relative paths and the default names are taken from.
 */
export function findConfigFile(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  cwd: string,
): ConfigFileLocation {
  const named = flag ?? (env.REPLAYABLE_CONFIG === "" ? undefined : env.REPLAYABLE_CONFIG);
  if (named !== undefined) {
    const path = isAbsolute(named) ? named : resolve(cwd, named);
    const setting = flag !== undefined ? "--config" : "REPLAYABLE_CONFIG";
    return existsSync(path) && statSync(path).isFile()
      ? { kind: "found", path }
      : { kind: "missing", path, setting };
  }
  for (const name of CONFIG_FILE_NAMES) {
    const path = join(cwd, name);
    if (existsSync(path)) return { kind: "found", path };
  }
  return { kind: "none" };
}
