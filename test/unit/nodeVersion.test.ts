/**
 * bin/nodeVersion.js: the CLI warns on a Node.js older than package.json's "engines" (a newcomer
 * ran it on Node.js 20 without a word), and not on a supported one.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OLDEST_SUPPORTED, unsupportedNodeWarning } from "../../bin/nodeVersion.js";

describe("unsupportedNodeWarning", () => {
  it.each(["20.20.2", "18.0.0", "22.14.9"])(
    "warns on %s, naming the version and the oldest supported",
    (v) => {
      expect(unsupportedNodeWarning(v)).toBe(
        `replayable: Node.js ${v} is not supported and untested; use Node.js 22.15 or later (22, 24 or 26; README "Supported Node.js versions")`,
      );
    },
  );

  it.each(["22.15.0", "22.23.1", "24.22.3", "26.12.0", "30.0.0"])("is quiet on %s", (v) => {
    expect(unsupportedNodeWarning(v)).toBeUndefined();
  });

  it("follows package.json's engines", () => {
    const engines = (
      JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
        engines: { node: string };
      }
    ).engines.node;
    expect(engines).toBe(`>=${OLDEST_SUPPORTED.join(".")}`);
  });
});
