/** Recognising node-postgres's client-side query timeout, whose connection must be discarded. */
import { DrizzleQueryError } from "drizzle-orm/errors";
import { describe, expect, it } from "vitest";
import { isQueryReadTimeout } from "../../../src/db/pool.js";

describe("isQueryReadTimeout", () => {
  it("finds node-postgres's 'Query read timeout', also wrapped by drizzle-orm", () => {
    expect(isQueryReadTimeout(new Error("Query read timeout"))).toBe(true);
    expect(isQueryReadTimeout(new DrizzleQueryError("select 1", [], new Error("Query read timeout")))).toBe(
      true,
    );
  });

  it("is false for other errors and for non-errors", () => {
    expect(isQueryReadTimeout(new Error("Connection terminated unexpectedly"))).toBe(false);
    expect(isQueryReadTimeout("Query read timeout")).toBe(false);
    expect(isQueryReadTimeout(undefined)).toBe(false);
  });
});
