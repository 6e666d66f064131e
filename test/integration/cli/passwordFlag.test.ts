/**
 * Issue 26 item 7: `--database-url` puts its password in the process's command line, where other
 * local users can read it (ps, /proc/<pid>/cmdline). The CLI warns and points to DATABASE_URL_FILE.
 * The test database trusts every local connection, so any password connects.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/process.js";

const password = "pw-cmdline-5f3a/x";

describe("a password given with --database-url", () => {
  it("warns on stderr that other local users can read it, and points to DATABASE_URL_FILE", async () => {
    const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:5432/test`;
    const r = await runCli(["dead-letters", "list", "--database-url", url]);
    expect(r.stderr).toMatch(/--database-url.*password.*command line/);
    expect(r.stderr).toContain("DATABASE_URL_FILE");
    expect(r.stderr).not.toContain(password);
    expect(r.stderr).not.toContain(encodeURIComponent(password));
  });

  it("warns for a password query parameter too", async () => {
    const r = await runCli([
      "dead-letters",
      "list",
      "--database-url",
      "postgres://postgres@127.0.0.1:5432/test?password=qp-secret-91",
    ]);
    expect(r.stderr).toContain("DATABASE_URL_FILE");
    expect(r.stderr).not.toContain("qp-secret-91");
  });

  it("does not warn for a URL without a password, or one in DATABASE_URL", async () => {
    const flag = await runCli([
      "dead-letters",
      "list",
      "--database-url",
      "postgres://postgres@127.0.0.1:5432/test",
    ]);
    expect(flag.stderr).not.toContain("DATABASE_URL_FILE");
    const env = await runCli(["dead-letters", "list"], {
      DATABASE_URL: "postgres://postgres:envpw@127.0.0.1:5432/test",
    });
    expect(env.stderr).not.toContain("DATABASE_URL_FILE");
  });
});
