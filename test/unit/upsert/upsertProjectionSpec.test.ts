import { describe, expect, it } from "vitest";
import { ReplayableError } from "../../../src/errors.js";
import {
  parseUpsertProjectionSpec,
  upsertSpecProblems,
} from "../../../src/projections/upsert/upsertProjectionSpec.js";

const valid = {
  kind: "upsert",
  name: "customers",
  topics: ["customers"],
  table: "crm.customers",
  key: { from: "record-key", column: "id" },
  columns: { email: { type: "text" }, visits: { field: "visitCount", type: "bigint" } },
};

describe("upsertProjectionSpecSchema", () => {
  it("accepts a declaration and applies the defaults", () => {
    expect(parseUpsertProjectionSpec(valid)).toEqual({
      ...valid,
      mode: "upsert",
      dedupe: { kind: "offset" },
      deleteOnTombstone: false,
      key: [{ from: "record-key", column: "id", type: "text" }],
      columns: {
        email: { type: "text", required: false },
        visits: { field: "visitCount", type: "bigint", required: false },
      },
    });
  });

  it("accepts a composite key, an event-id header and insert mode without a key", () => {
    const composite = parseUpsertProjectionSpec({
      ...valid,
      dedupe: { kind: "event-id", header: "ce_id" },
      key: [
        { from: "record-key", name: "tenant", column: "tenant_id", type: "integer" },
        { from: "header", name: "region", column: "region" },
      ],
    });
    expect(composite.key.map((k) => k.column)).toEqual(["tenant_id", "region"]);
    expect(composite.dedupe).toEqual({ kind: "event-id", header: "ce_id" });
    const { key: _key, ...keyless } = valid;
    expect(parseUpsertProjectionSpec({ ...keyless, mode: "insert" }).key).toEqual([]);
  });

  it("lists every problem of a bad declaration together, each with its path and the fix", () => {
    const problems = upsertSpecProblems({
      kind: "upsert",
      name: "Customers",
      topics: [],
      table: "customers",
      mode: "merge",
      dedupe: { kind: "event-id", field: "id" },
      key: { from: "field", column: "id", type: "jsonb" },
      columns: { id: { type: "text" }, amount: { type: "money", extra: true }, "a.b": { type: "text" } },
      deleteOnTombstone: true,
      batchSize: 5,
    });
    expect(problems).toEqual([
      { path: "name", message: expect.stringContaining("must be lower case letters") as string },
      { path: "topics", message: "must name at least one topic" },
      { path: "table", message: expect.stringContaining('must be "schema.table" with one dot') as string },
      { path: "mode", message: expect.stringContaining('must be "insert"') as string },
      {
        path: "key.type",
        message: expect.stringContaining("use one of text, smallint, integer, bigint, uuid") as string,
      },
      {
        path: "columns.amount.type",
        message: expect.stringContaining('"money" is not a declarable type') as string,
      },
      { path: "columns.amount", message: expect.stringContaining('unknown field "extra"') as string },
      { path: "", message: expect.stringContaining('unknown field "batchSize"') as string },
      { path: "key.name", message: expect.stringContaining('is required when from is "field"') as string },
      { path: "columns.id", message: "is a key column, which the key fills; remove it from columns" },
      { path: "key.from", message: expect.stringContaining('use "record-key" or "header"') as string },
      { path: "dedupe.field", message: expect.stringContaining("a tombstone has no value") as string },
    ]);
  });

  it("names a key part by its index when the key is a list", () => {
    const problems = upsertSpecProblems({
      ...valid,
      key: [
        { from: "record-key", column: "id" },
        { from: "record-key", name: "tenant", column: "id" },
      ],
    });
    expect(problems.map((p) => p.path)).toEqual(["key", "key"]);
    expect(problems[0]!.message).toContain("either one value");
    expect(problems[1]!.message).toContain('column "id" is named by two key parts');
    expect(upsertSpecProblems({ ...valid, key: [{ from: "header", column: "id" }] })).toEqual([
      {
        path: "key[0].name",
        message: expect.stringContaining('is required when from is "header"') as string,
      },
    ]);
  });

  it("requires a key in upsert mode and with deleteOnTombstone, and one dedupe source", () => {
    const { key: _key, ...keyless } = valid;
    expect(upsertSpecProblems({ ...keyless, deleteOnTombstone: true, dedupe: { kind: "event-id" } })).toEqual(
      [
        { path: "key", message: expect.stringContaining("is required in upsert mode") as string },
        { path: "key", message: expect.stringContaining("is required with deleteOnTombstone") as string },
        { path: "dedupe", message: expect.stringContaining("exactly one of header") as string },
      ],
    );
  });

  it("reports missing required fields and a non-object", () => {
    expect(upsertSpecProblems({ kind: "upsert" }).map((p) => p.path)).toEqual([
      "name",
      "topics",
      "table",
      "columns",
      "key",
    ]);
    expect(upsertSpecProblems("upsert")).toEqual([
      { path: "", message: "must be an object: an upsert projection" },
    ]);
  });

  it("throws CONFIG_INVALID naming where the declaration is", () => {
    let error: unknown;
    try {
      parseUpsertProjectionSpec({ ...valid, columns: { email: { type: "varchar" } } }, "projections[1]");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ReplayableError);
    expect((error as ReplayableError).code).toBe("CONFIG_INVALID");
    expect((error as Error).message).toMatch(
      /^invalid upsert projection:\n {2}projections\[1\]\.columns\.email\.type: "varchar" is not a declarable type; use one of text, /,
    );
  });
});
