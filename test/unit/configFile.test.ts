import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { findConfigFile } from "../../src/configFile/findConfigFile.js";
import { parseConfigFile } from "../../src/configFile/parseConfigFile.js";
import { settingText } from "../../src/configFile/settings.js";

const projection = {
  name: "orders",
  dedupe: { kind: "offset" },
  topics: ["orders"],
  tables: ["orders.totals"],
  decode: (r: unknown) => r,
  apply: () => Promise.resolve(),
};

describe("config file settings merge under the environment and the flags", () => {
  const file = parseConfigFile("/app/replayable.config.ts", {
    kafkaBrokers: ["a:1", "b:2"],
    dbPoolSize: 4,
    partitionsConcurrently: 2,
    prefetch: false,
    groupId: "from-file",
  }).settings;

  it("takes a setting from the file when neither the environment nor a flag gives it", () => {
    const r = parseConfig({}, {}, file);
    expect(r.ok && r.config.kafka.brokers).toEqual(["a:1", "b:2"]);
    expect(r.ok && r.config.dbPoolSize).toBe(4);
    expect(r.ok && r.config.prefetch).toBe(false);
  });

  it("lets the environment override the file, and a flag override both", () => {
    const env = { REPLAYABLE_GROUP_ID: "from-env", REPLAYABLE_DB_POOL_SIZE: "6" };
    const r = parseConfig(env, { REPLAYABLE_GROUP_ID: "from-flag" }, file);
    expect(r.ok && r.config.groupId).toBe("from-flag");
    expect(r.ok && r.config.dbPoolSize).toBe(6);
  });

  it("names the file and the setting in a problem with a value from the file", () => {
    const bad = parseConfigFile("/app/replayable.config.ts", { maxBatchRecords: 0 }).settings;
    const r = parseConfig({}, {}, bad);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems).toEqual([
      "  REPLAYABLE_MAX_BATCH_RECORDS=0 (from replayable.config.ts: maxBatchRecords): must be at least 1 record",
    ]);
  });

  it("reports rules between settings across layers (the file's pool, the environment's concurrency)", () => {
    const r = parseConfig({ REPLAYABLE_PARTITIONS_CONCURRENTLY: "8" }, {}, file);
    expect(!r.ok && r.problems.join("\n")).toContain("must be at most REPLAYABLE_DB_POOL_SIZE (4)");
  });

  it("writes arrays as comma-separated lists and refuses other shapes", () => {
    expect(settingText(["t1", "t2"])).toBe("t1,t2");
    expect(settingText(3)).toBe("3");
    expect(settingText({ a: 1 })).toBeUndefined();
  });
});

describe("parseConfigFile reports every problem of the file at once", () => {
  it("lists unknown settings, unknown fields, invalid fields and duplicate names together", () => {
    const parsed = parseConfigFile("/app/replayable.config.ts", {
      metricsPrt: 9464,
      projections: [
        { ...projection, tabels: [] },
        { ...projection, name: "Orders" },
        projection,
        projection,
        { kind: "sideways", name: "x" },
      ],
    });
    expect(parsed.problems).toEqual([
      "  replayable.config.ts: metricsPrt: is not a setting; did you mean metricsPort?",
      "  replayable.config.ts: projections[0] (orders): tabels: unknown field; did you mean tables?",
      "  replayable.config.ts: projections[1] (Orders): name: must be lower case letters, digits and _, starting with a letter, at most 42 characters",
      '  replayable.config.ts: projections[2] (orders): name "orders" is already used by projections[0]; each projection needs its own name (it keys its checkpoints and event ids)',
      '  replayable.config.ts: projections[3] (orders): name "orders" is already used by projections[0]; each projection needs its own name (it keys its checkpoints and event ids)',
      '  replayable.config.ts: projections[4] (x): kind: must be one of "upsert" (a zero-code projection), or leave kind out and use defineProjection({ ... })',
    ]);
    // The first "orders" is invalid, and the later ones are duplicates of it: none is used.
    expect(parsed.projections).toEqual([]);
  });

  it("resolves a migrations folder against the config file and requires its journal", () => {
    const dir = mkdtempSync(join(tmpdir(), "replayable-unit-"));
    mkdirSync(join(dir, "migrations", "meta"), { recursive: true });
    writeFileSync(join(dir, "migrations", "meta", "_journal.json"), "{}");
    const ok = parseConfigFile(join(dir, "replayable.config.ts"), {
      projections: [{ ...projection, migrations: "./migrations" }],
    });
    expect(ok.problems).toEqual([]);
    expect(ok.projections[0]?.migrationsFolder).toBe(join(dir, "migrations"));
    expect(ok.projections[0]?.defaultTopics).toEqual(["orders"]);
    const missing = parseConfigFile(join(dir, "replayable.config.ts"), {
      projections: [{ ...projection, migrations: "./nowhere" }],
    });
    expect(missing.problems[0]).toContain(`migrations: ${join(dir, "nowhere")} has no meta/_journal.json`);
  });

  it("passes retryAfterLaterRecords on to the projection, and refuses one that is not a boolean", () => {
    const parsed = parseConfigFile("/app/replayable.config.ts", {
      projections: [
        { ...projection, retryAfterLaterRecords: false },
        { ...projection, name: "plain" },
        { ...projection, name: "wrong", retryAfterLaterRecords: "no" },
      ],
    });
    expect(parsed.problems).toEqual([
      "  replayable.config.ts: projections[2] (wrong): retryAfterLaterRecords: must be true or false",
    ]);
    expect(parsed.projections.map((p) => [p.name, p.retryAfterLaterRecords])).toEqual([
      ["orders", false],
      ["plain", undefined],
    ]);
  });
});

describe("findConfigFile", () => {
  it("prefers --config to REPLAYABLE_CONFIG to the working directory's replayable.config.*", () => {
    const dir = mkdtempSync(join(tmpdir(), "replayable-unit-"));
    writeFileSync(join(dir, "replayable.config.mjs"), "export default {}");
    writeFileSync(join(dir, "other.ts"), "export default {}");
    expect(findConfigFile(undefined, {}, dir)).toEqual({
      kind: "found",
      path: join(dir, "replayable.config.mjs"),
    });
    expect(findConfigFile(undefined, { REPLAYABLE_CONFIG: "other.ts" }, dir)).toEqual({
      kind: "found",
      path: join(dir, "other.ts"),
    });
    expect(findConfigFile("gone.ts", { REPLAYABLE_CONFIG: "other.ts" }, dir)).toEqual({
      kind: "missing",
      path: join(dir, "gone.ts"),
      setting: "--config",
    });
    expect(findConfigFile(undefined, {}, tmpdir())).toEqual({ kind: "none" });
  });
});
