#!/usr/bin/env node
// Entry point of the `replayable` CLI: the TypeScript sources through tsx in a checkout,
// the compiled dist/ when installed as a package.
import { existsSync } from "node:fs";
// First, before the CLI's modules are resolved: saves ~1 s of CPU at start (see the file).
import "./resolveHooks.js";
import { unsupportedNodeWarning } from "./nodeVersion.js";

const unsupported = unsupportedNodeWarning(process.versions.node);
if (unsupported !== undefined) process.stderr.write(`${unsupported}\n`);

const source = new URL("../src/cli/main.ts", import.meta.url);
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import(new URL("../dist/src/cli/main.js", import.meta.url).href);
}
