import { describe, expect, it } from "vitest";
import { explainNotMigrated, notMigratedError } from "../../../src/db/notMigrated.js";
import { ReplayableError } from "../../../src/errors.js";

/** An error shaped as node-postgres raises PostgreSQL's (SQLSTATE in `code`). */
function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("a database that was never migrated", () => {
  it("regression: 42P01 on replayable.checkpoints says to run `replayable migrate` first, not the raw relation error", () => {
    const explained = explainNotMigrated(
      pgError("42P01", 'relation "replayable.checkpoints" does not exist'),
    );
    expect(explained).toBeInstanceOf(ReplayableError);
    expect(explained?.code).toBe("NOT_MIGRATED");
    expect(explained?.message).toContain("run `replayable migrate` first");
    expect(explained?.message).toContain("replayable.checkpoints does not exist");
  });

  it("finds it in a cause chain (drizzle wraps node-postgres's error)", () => {
    const wrapped = new Error("Failed query: select ...", {
      cause: pgError("42P01", 'relation "replayable.projection_versions" does not exist'),
    });
    expect(explainNotMigrated(wrapped)?.message).toContain("replayable.projection_versions");
  });

  it("leaves a projection's own missing table, and other errors, as they are", () => {
    expect(explainNotMigrated(pgError("42P01", 'relation "sales.totals" does not exist'))).toBeUndefined();
    expect(explainNotMigrated(pgError("42501", "permission denied for table checkpoints"))).toBeUndefined();
    expect(explainNotMigrated(new Error('relation "replayable.checkpoints" does not exist'))).toBeUndefined();
  });

  it("names the database without its password", () => {
    const error = notMigratedError("postgres://u:hunter2@h:5432/db", ["replayable.checkpoints"]);
    expect(error.message).toContain("postgres://u:***@h:5432/db");
    expect(error.message).not.toContain("hunter2");
  });
});
