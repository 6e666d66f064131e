// Preloaded with `node --import` by test/integration/tracing/traces.test.ts: records every module
// the process loads, and which module loaded it, into the JSON file LOADED_MODULES_FILE at exit.
// ES modules through a synchronous load hook (module.registerHooks, Node.js >= 22.15); CommonJS
// modules (which tsx's require hook can load without that hook) from the require cache.
import { writeFileSync } from "node:fs";
import { createRequire, registerHooks } from "node:module";
import { pathToFileURL } from "node:url";

/** url -> the url of the module that loaded it (undefined when unknown). */
const loaded = new Map();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (!loaded.has(resolved.url)) loaded.set(resolved.url, context.parentURL);
    return resolved;
  },
});
const cache = createRequire(import.meta.url).cache;
process.on("exit", () => {
  for (const [file, module] of Object.entries(cache)) {
    const url = pathToFileURL(file).href;
    const parent = module?.parent?.filename;
    if (!loaded.has(url) || loaded.get(url) === undefined)
      loaded.set(url, parent === undefined ? undefined : pathToFileURL(parent).href);
  }
  writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify(Object.fromEntries(loaded), null, 1));
});
