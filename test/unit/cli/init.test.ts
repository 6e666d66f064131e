import { describe, expect, it } from "vitest";
import { initFiles } from "../../../src/cli/commands/init.js";
import { loadConfig } from "../../../src/config.js";

describe("replayable init", () => {
  it("regression: writes the documented DATABASE_URL default (…/test, the local stack's), not …/postgres", () => {
    const config = initFiles()["replayable.config.ts"]!;
    const written = /databaseUrl: "([^"]+)"/.exec(config)?.[1];
    expect(written).toBe(loadConfig({}).databaseUrl);
    expect(written).toBe("postgres://postgres@127.0.0.1:5432/test");
  });
});
