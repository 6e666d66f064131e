/**
 * Two demos on one PostgreSQL server: the second one with the same database stops at once (exit 2,
 * naming REPLAYABLE_DEMO_DATABASE) instead of dropping the first one's database mid-run (issue 28).
 * The first demo is stood in for by a session holding the demo's advisory lock; the database it
 * would be using must still exist afterwards.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { ADMIN_DATABASE_URL, uniqueName } from "../../helpers/stack.js";

const run = promisify(execFile);

/** Runs scripts/demo.ts as `make demo` does; resolves with its exit code and output. */
async function demo(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "scripts/demo.ts"], {
      env: { ...process.env, DATABASE_URL: ADMIN_DATABASE_URL, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

describe("make demo on a server where another demo runs", () => {
  it("stops with exit 2 and leaves the other demo's database alone", async () => {
    const name = uniqueName("demo");
    const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
    await admin.connect();
    onTestFinished(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    });
    await admin.query(`CREATE DATABASE ${name}`);
    // The "first demo": the same lock scripts/demo.ts takes.
    await admin.query("SELECT pg_advisory_lock(hashtext('replayable demo'), hashtext($1))", [name]);

    const second = await demo({ REPLAYABLE_DEMO_DATABASE: name });
    expect(second.code, second.stderr).toBe(2);
    expect(second.stderr).toContain(
      `demo: another demo is running with database ${name} on postgres://postgres@127.0.0.1:5432/test; wait for it, or run this one with another database: REPLAYABLE_DEMO_DATABASE=${name}_2 make demo`,
    );
    const { rows } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    expect(rows).toHaveLength(1);
  });

  it("refuses a database name it would have to quote, naming the variable", async () => {
    const result = await demo({ REPLAYABLE_DEMO_DATABASE: "demo; DROP" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('REPLAYABLE_DEMO_DATABASE="demo; DROP" is not a plain database name');
  });
});
