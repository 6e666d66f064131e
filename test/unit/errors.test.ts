import { DrizzleQueryError } from "drizzle-orm/errors";
import { describe, expect, it } from "vitest";
import { classifyPgError, recordErrorMessage, sqlState } from "../../src/errors.js";

/** A node-postgres DatabaseError's shape: message, SQLSTATE code, optional constraint. */
function pgError(code: string, message = `error ${code}`, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { code, severity: "ERROR", ...extra });
}

function errno(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe("classifyPgError", () => {
  const cases: [string, unknown, { kind: string; reason: string }][] = [
    ["40001 serialization_failure", pgError("40001"), { kind: "transient", reason: "serialization_failure" }],
    ["40P01 deadlock_detected", pgError("40P01"), { kind: "transient", reason: "deadlock" }],
    ["08006 connection_failure", pgError("08006"), { kind: "transient", reason: "connection" }],
    ["08003 connection_does_not_exist", pgError("08003"), { kind: "transient", reason: "connection" }],
    ["57P01 admin_shutdown", pgError("57P01"), { kind: "transient", reason: "connection" }],
    [
      "regression: 25P03 idle_in_transaction_session_timeout (the server ended a transaction it found idle)",
      pgError("25P03"),
      { kind: "transient", reason: "connection" },
    ],
    ["57P05 idle_session_timeout", pgError("57P05"), { kind: "transient", reason: "connection" }],
    ["57P03 cannot_connect_now", pgError("57P03"), { kind: "transient", reason: "connection" }],
    ["53300 too_many_connections", pgError("53300"), { kind: "transient", reason: "unavailable" }],
    ["53100 disk_full", pgError("53100"), { kind: "transient", reason: "unavailable" }],
    ["ECONNRESET", errno("ECONNRESET"), { kind: "transient", reason: "connection" }],
    ["ECONNREFUSED", errno("ECONNREFUSED"), { kind: "transient", reason: "connection" }],
    [
      "regression: EPIPE is an errno, not a SQLSTATE",
      errno("EPIPE"),
      { kind: "transient", reason: "connection" },
    ],
    [
      "pool timeout",
      new Error("timeout exceeded when trying to connect"),
      { kind: "transient", reason: "connection" },
    ],
    [
      "connection terminated",
      new Error("Connection terminated unexpectedly"),
      { kind: "transient", reason: "connection" },
    ],
    ["22P02 invalid_text_representation", pgError("22P02"), { kind: "permanent", reason: "other" }],
    ["23505 unique_violation", pgError("23505"), { kind: "permanent", reason: "other" }],
    ["23514 check_violation", pgError("23514"), { kind: "permanent", reason: "other" }],
    ["42P01 undefined_table (a fault)", pgError("42P01"), { kind: "fault", reason: "other" }],
    ["a TypeError (a fault)", new TypeError("x is undefined"), { kind: "fault", reason: "other" }],
    [
      "regression: 23505 wrapped by drizzle's DrizzleQueryError",
      new DrizzleQueryError("insert into t", [1], pgError("23505")),
      { kind: "permanent", reason: "other" },
    ],
    [
      "regression: 57P01 wrapped by drizzle's DrizzleQueryError",
      new DrizzleQueryError("select 1", [], pgError("57P01")),
      { kind: "transient", reason: "connection" },
    ],
    [
      "node-postgres's client-side query timeout (REPLAYABLE_DB_QUERY_TIMEOUT_MS), wrapped by drizzle",
      new DrizzleQueryError("select 1", [], new Error("Query read timeout")),
      { kind: "transient", reason: "connection" },
    ],
    [
      "regression: Connection terminated wrapped by drizzle",
      new DrizzleQueryError("select 1", [], new Error("Connection terminated unexpectedly")),
      { kind: "transient", reason: "connection" },
    ],
  ];
  it.each(cases)("%s", (_name, error, expected) => {
    expect(classifyPgError(error)).toEqual(expected);
  });
});

describe("sqlState", () => {
  it("finds the SQLSTATE through a cause chain and ignores errno codes", () => {
    expect(sqlState(new DrizzleQueryError("q", [], pgError("22021")))).toBe("22021");
    expect(sqlState(errno("ECONNRESET"))).toBeUndefined();
    expect(sqlState(errno("EPIPE"))).toBeUndefined();
  });

  it("knows the classes with a letter: 3D (no such database), 0A, 3F, 3B, and F0, HV, P0, XX", () => {
    for (const code of ["3D000", "0A000", "3F000", "3B001", "2BP01", "F0001", "HV000", "P0001", "XX000"])
      expect(sqlState(pgError(code))).toBe(code);
  });
});

describe("recordErrorMessage", () => {
  it("uses the PostgreSQL message and SQLSTATE instead of drizzle's query and parameters", () => {
    const error = new DrizzleQueryError(
      "insert into ledger.ledger_accounts values ($1)",
      ["nul\u0000acc"],
      pgError("22021", 'invalid byte sequence for encoding "UTF8": 0x00'),
    );
    expect(recordErrorMessage(error)).toBe(
      'invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)',
    );
  });

  it("names the constraint of an integrity violation", () => {
    expect(
      recordErrorMessage(
        pgError("23505", "duplicate key value", { constraint: "orders_pkey", table: "orders" }),
      ),
    ).toBe("duplicate key value (SQLSTATE 23505, constraint orders_pkey)");
  });

  it("removes NUL characters, which a PostgreSQL text column cannot store", () => {
    expect(recordErrorMessage(new Error("Unexpected token '\u0000'"))).toBe("Unexpected token '\\0'");
  });

  it("caps a long message at 2000 characters", () => {
    const message = recordErrorMessage(new Error("x".repeat(5000)));
    expect(message.length).toBeLessThanOrEqual(2000);
    expect(message.endsWith("…")).toBe(true);
  });
});

const pgErrorOf = (code: string) => Object.assign(new Error(`pg ${code}`), { code });

describe("classifyPgError", () => {
  it.each([
    ["40001", "transient", "serialization_failure"],
    ["40P01", "transient", "deadlock"],
    ["08006", "transient", "connection"],
    ["57P01", "transient", "connection"],
    ["53300", "transient", "unavailable"],
    ["23505", "permanent", "other"],
    ["22021", "permanent", "other"],
    ["21000", "permanent", "other"],
    ["42P01", "fault", "other"],
  ])("SQLSTATE %s is %s (%s)", (code, kind, reason) => {
    expect(classifyPgError(pgErrorOf(code))).toEqual({ kind, reason });
  });

  it("finds the SQLSTATE of a driver error wrapped by drizzle-orm (regression: 22021 retried forever)", () => {
    const wrapped = new Error("Failed query: insert …", { cause: pgErrorOf("22021") });
    expect(sqlState(wrapped)).toBe("22021");
    expect(classifyPgError(wrapped).kind).toBe("permanent");
  });

  it("treats socket errors without a SQLSTATE as transient connection failures", () => {
    expect(classifyPgError(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).toEqual({
      kind: "transient",
      reason: "connection",
    });
    expect(classifyPgError(new Error("Connection terminated unexpectedly")).kind).toBe("transient");
    expect(classifyPgError(new TypeError("x is undefined")).kind).toBe("fault");
  });
});

describe("recordErrorMessage", () => {
  it("keeps the database's message and SQLSTATE, not drizzle's query and params, and drops NUL", () => {
    const wrapped = new Error("Failed query: insert … params: acc-\u0000,5", {
      cause: Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: "22021" }),
    });
    expect(recordErrorMessage(wrapped)).toBe(
      'invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)',
    );
    expect(recordErrorMessage(new Error("a\u0000b"))).toBe("a\\0b");
  });
});
