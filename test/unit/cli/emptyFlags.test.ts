import { describe, expect, it } from "vitest";
import { emptyFlagProblems } from "../../../src/cli/common.js";

describe("flags given an empty value", () => {
  it("regression: `--brokers ''` is a problem naming the flag, not a silent fall-back to the default brokers", () => {
    expect(emptyFlagProblems({ brokers: "", output: "table" })).toEqual([
      "  --brokers: is empty; give it a value, or leave the flag out to use its variable, the config file or the default",
    ]);
  });

  it("regression: a flag with no variable, config setting or default is not told to fall back to one (`--code ''` was)", () => {
    expect(emptyFlagProblems({ code: [""], projection: "" })).toEqual([
      "  --code: is empty; give it a value, or leave the flag out",
      "  --projection: is empty; give it a value, or leave the flag out to use its variable, the config file or the default",
    ]);
  });

  it("names every empty flag in kebab case, list flags included, and accepts flags left out, booleans and values", () => {
    const problems = emptyFlagProblems({
      databaseUrl: " ",
      topic: ["orders", ""],
      group: undefined,
      execute: true,
      migrate: false,
      projection: "sales",
    });
    expect(problems.map((p) => p.split(":")[0]!.trim())).toEqual(["--database-url", "--topic"]);
  });
});
