import { mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createJiti } from "jiti";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { importConfigFile } from "../../src/configFile/importConfigFile.js";

/**
 * Issue 26 item 8: jiti's file cache lives in the shared temp folder when the config's folder has
 * no node_modules, and jiti runs a file there whose trailer matches. Another local user who
 * pre-creates that folder could plant code that runs as the operator.
 */
describe("importConfigFile and jiti's file cache (issue 26 item 8)", () => {
  let temp: string;
  let savedTmpdir: string | undefined;
  let configDir: string;

  beforeEach(() => {
    savedTmpdir = process.env.TMPDIR;
    temp = mkdtempSync(join(tmpdir(), "replayable-jiti-tmp-"));
    configDir = mkdtempSync(join(tmpdir(), "replayable-etc-")); // like /etc: no node_modules
    process.env.TMPDIR = temp;
  });

  afterEach(() => {
    if (savedTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmpdir;
    rmSync(temp, { recursive: true, force: true });
    rmSync(configDir, { recursive: true, force: true });
    delete (globalThis as Record<string, unknown>).__replayablePlanted;
  });

  it("writes nothing to the temp folder's jiti cache", async () => {
    const path = join(configDir, "replayable.config.ts");
    writeFileSync(path, "const n: number = 7;\nexport default { n };\n");
    const loaded = await importConfigFile(path);
    expect(loaded).toEqual({ ok: true, value: { n: 7 } });
    const cache = join(temp, "jiti");
    expect(existsSync(cache) ? readdirSync(cache) : []).toEqual([]);
    expect(readdirSync(temp)).toEqual([]); // no jiti-esm temporary module either
  });

  it("does not run a planted cache file whose trailer matches", async () => {
    const path = join(configDir, "replayable.config.ts");
    writeFileSync(path, "const n: number = 7;\nexport default { n };\n");
    // What a planter can compute (the path and source are readable): let jiti write the entry.
    const cache = join(temp, "jiti");
    const planter = createJiti(import.meta.url, {
      fsCache: cache,
      moduleCache: false,
      interopDefault: false,
    });
    await planter.import(path);
    const [entry] = readdirSync(cache);
    expect(entry).toBeDefined();
    const file = join(cache, entry!);
    const trailer = /( \/\* v\d+-[^*]+ \*\/\n)$/.exec(readFileSync(file, "utf8"))?.[1];
    expect(trailer).toBeDefined();
    writeFileSync(
      file,
      `globalThis.__replayablePlanted = true; module.exports = { default: { n: 666 } };${trailer!}`,
    );
    const loaded = await importConfigFile(path);
    expect((globalThis as Record<string, unknown>).__replayablePlanted).toBeUndefined();
    expect(loaded).toEqual({ ok: true, value: { n: 7 } });
  });
});
