import { describe, expect, it } from "vitest";
import { classifyPgError, recordErrorMessage, sqlState } from "../../src/errors.js";

const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code });

describe("classifyPgError", () => {
  it.each([
    ["40001", "transient", "serialization_failure"],
    ["40P01", "transient", "deadlock"],
    ["08006", "transient", "connection"],
    ["57P01", "transient", "connection"],
    ["53300", "transient", "unavailable"],
    ["23505", "permanent", "other"],
    ["22021", "permanent", "other"],
    ["42P01", "fault", "other"],
  ])("SQLSTATE %s is %s (%s)", (code, kind, reason) => {
    expect(classifyPgError(pgError(code))).toEqual({ kind, reason });
  });

  it("finds the SQLSTATE of a driver error wrapped by drizzle-orm (regression: 22021 retried forever)", () => {
    const wrapped = new Error("Failed query: insert …", { cause: pgError("22021") });
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
