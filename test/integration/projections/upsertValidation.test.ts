/**
 * The upsert sink's start-up validation against a real PostgreSQL catalog: every problem of a
 * declaration against its table is reported together, with the column or field and the fix.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  parseUpsertProjectionSpec,
  type UpsertProjectionDeclaration,
} from "../../../src/projections/upsert/upsertProjectionSpec.js";
import { validateUpsertProjection } from "../../../src/projections/upsert/validateUpsertProjection.js";
import { createTestDatabase, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(`
    CREATE SCHEMA sink;
    CREATE TABLE sink.accounts (
      id bigint NOT NULL,
      email text UNIQUE,
      balance integer,
      opened date,
      owner text NOT NULL,
      half integer GENERATED ALWAYS AS (balance / 2) STORED
    );
    CREATE UNIQUE INDEX accounts_id_partial ON sink.accounts (id) WHERE balance > 0;
    CREATE TABLE sink.people (id text PRIMARY KEY, name text);
    CREATE COLLATION sink.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
    CREATE TABLE sink.tags (name text COLLATE sink.ci PRIMARY KEY, n integer);
    CREATE TABLE sink.deferred (id bigint, n integer, UNIQUE (id) DEFERRABLE);
    CREATE DOMAIN sink.utc_ts AS timestamptz;
    CREATE DOMAIN sink.event_ts AS sink.utc_ts;
    CREATE TABLE sink.times (
      id bigint PRIMARY KEY, at timestamptz, local timestamp, day date, clock time, zoned_clock timetz,
      stamped sink.event_ts, noted text, day_noted varchar(40)
    );
    CREATE VIEW sink.people_view AS SELECT * FROM sink.people;
  `);
});
afterAll(async () => {
  await db?.drop();
});

const declaration = (overrides: Partial<UpsertProjectionDeclaration>): UpsertProjectionDeclaration => ({
  kind: "upsert",
  name: "accounts",
  topics: ["accounts"],
  table: "sink.accounts",
  key: { from: "record-key", column: "id", type: "bigint" },
  columns: { email: { type: "text" } },
  ...overrides,
});

const validate = (overrides: Partial<UpsertProjectionDeclaration>) =>
  validateUpsertProjection(parseUpsertProjectionSpec(declaration(overrides)), db.pool);

describe("validateUpsertProjection", () => {
  it("reports unknown columns, uncastable types, a generated column, an unfilled NOT NULL column and a missing unique key together", async () => {
    const problems = await validate({
      columns: {
        email: { type: "text" },
        balance: { type: "timestamptz" },
        opened: { type: "boolean" },
        nmae: { field: "name", type: "text" },
        half: { type: "integer" },
      },
    });
    expect(problems).toEqual([
      {
        path: "columns.balance",
        message:
          'declared type timestamptz cannot be stored in column balance of type integer (column "balance" is of type integer but expression is of type timestamp with time zone); declare a type PostgreSQL assigns to integer, or change the column',
      },
      {
        path: "columns.opened",
        message: expect.stringMatching(
          /^declared type boolean cannot be stored in column opened of type date \(/,
        ) as string,
      },
      {
        path: "columns.nmae",
        message:
          'column "nmae" does not exist in sink.accounts; its columns are id, email, balance, opened, owner, half (names are case-sensitive)',
      },
      {
        path: "columns.half",
        message: "column half is a generated column, which PostgreSQL computes; remove it",
      },
      {
        path: "key",
        message:
          'the key column (id) is not the primary key or a unique constraint of sink.accounts (its usable ones are (email)), which ON CONFLICT and dedupe by key need; add one in a migration (ALTER TABLE "sink"."accounts" ADD PRIMARY KEY ("id")), or change key',
      },
      {
        path: "columns",
        message:
          "column owner of sink.accounts is NOT NULL without a default and no field fills it, so every insert would fail; map it in columns or give it a default",
      },
    ]);
  });

  it("accepts a declaration that fits its table, with assignment casts (integer into bigint, text into varchar)", async () => {
    expect(
      await validate({
        table: "sink.people",
        key: { from: "header", name: "person", column: "id" },
        columns: { name: { type: "text" } },
        deleteOnTombstone: true,
      }),
    ).toEqual([]);
    expect(
      await validate({
        key: { from: "record-key", column: "email" },
        columns: { id: { type: "integer" }, owner: { type: "text" }, balance: { type: "smallint" } },
      }),
    ).toEqual([]);
  });

  it("names a missing table, a missing schema, a view and a missing key column", async () => {
    expect(await validate({ table: "sink.acounts" })).toEqual([
      {
        path: "table",
        message: expect.stringContaining(
          "table sink.acounts does not exist; create it in a migration",
        ) as string,
      },
    ]);
    expect(await validate({ table: "snk.accounts" })).toEqual([
      { path: "table", message: expect.stringContaining('schema "snk" does not exist either') as string },
    ]);
    expect(await validate({ table: "sink.people_view" })).toEqual([
      {
        path: "table",
        message: "sink.people_view is not a table (pg_class.relkind v); name the table to write to",
      },
    ]);
    expect(
      await validate({
        table: "sink.people",
        key: [
          { from: "record-key", name: "id", column: "id" },
          { from: "record-key", name: "region", column: "region" },
        ],
        columns: {},
      }),
    ).toEqual([
      {
        path: "key[1].column",
        message: expect.stringContaining(
          'column "region" does not exist in sink.people; its columns are id, name',
        ) as string,
      },
    ]);
  });

  it("regression: a key whose only unique constraint is DEFERRABLE is told why it does not count (break-it review)", async () => {
    // It said the table had none.
    const problems = await validate({ table: "sink.deferred", columns: { n: { type: "integer" } } });
    expect(problems.map((p) => p.message).join("\n")).toContain(
      "it has none ON CONFLICT can use: a partial unique index or a DEFERRABLE constraint does not count",
    );
  });

  it("regression: refuses a declared type whose cast to its column depends on the session's time zone (break-it review)", async () => {
    // A rebuild under another TimeZone setting would store other instants or days.
    const problems = await validate({
      table: "sink.times",
      columns: {
        at: { type: "timestamp" },
        local: { type: "timestamptz" },
        day: { type: "timestamptz" },
        // The time of day, and a timetz's offset, are the session's too (review finding).
        clock: { type: "timestamptz" },
        zoned_clock: { type: "timestamptz" },
      },
    });
    expect(problems.map((p) => p.path).sort()).toEqual([
      "columns.at",
      "columns.clock",
      "columns.day",
      "columns.local",
      "columns.zoned_clock",
    ]);
    for (const problem of problems)
      expect(problem.message).toContain("the session's time zone (TimeZone) decides");
    expect(problems.find((p) => p.path === "columns.clock")!.message).toContain(
      "declare timestamp, or change",
    );
    expect(problems.find((p) => p.path === "columns.zoned_clock")!.message).toMatch(
      /so a rebuild under another setting would store other values; change the column$/,
    );
    // A domain over a domain over timestamptz is timestamptz (review finding: read as the inner domain).
    const [stamped] = await validate({ table: "sink.times", columns: { stamped: { type: "timestamp" } } });
    expect(stamped?.message).toContain("the session's time zone (TimeZone) decides");
    // Into a text column, PostgreSQL prints the value as DateStyle and TimeZone say (review finding).
    const printed = await validate({
      table: "sink.times",
      columns: { noted: { type: "timestamptz" }, day_noted: { type: "date" } },
    });
    expect(printed.map((p) => p.path).sort()).toEqual(["columns.day_noted", "columns.noted"]);
    expect(printed.find((p) => p.path === "columns.noted")!.message).toContain(
      "PostgreSQL prints the value, and the session's DateStyle and TimeZone decide the text stored",
    );
    expect(printed.find((p) => p.path === "columns.day_noted")!.message).toContain(
      "the session's DateStyle decides the text stored",
    );
    expect(
      await validate({
        table: "sink.times",
        columns: {
          at: { type: "timestamptz" },
          local: { type: "timestamp" },
          day: { type: "date" },
          clock: { type: "timestamp" },
          stamped: { type: "timestamptz" },
          noted: { type: "text" },
        },
      }),
    ).toEqual([]);
  });

  it("refuses a tombstone-deleting key whose column has equal values with different spellings", async () => {
    expect(
      await validate({
        table: "sink.tags",
        key: { from: "record-key", column: "name" },
        columns: { n: { type: "integer" } },
        deleteOnTombstone: true,
      }),
    ).toEqual([
      {
        path: "key.column",
        message: expect.stringContaining(
          "column name of type text with a nondeterministic collation has equal values",
        ) as string,
      },
    ]);
  });
});
