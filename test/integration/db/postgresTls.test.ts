/**
 * PostgreSQL over TLS, against a private server with `ssl = on` and `hostssl` lines only (its
 * certificate from a CA made in the test run, for DNS:localhost and IP:127.0.0.1; it also listens
 * on 127.0.0.2, an address its certificate does not name). `sslmode` behaves as libpq documents
 * it, each mismatch is a start-up error (exit 2) naming what to set, and a runtime role with the
 * grants docs/security.md lists runs, while one without a grant is refused naming the GRANT.
 */
import { createPrivateKey } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { connectionConfig, createPool } from "../../../src/db/pool.js";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { startPrivatePostgres, type PrivatePostgres } from "../../helpers/privatePostgres.js";
import { runCli, startCliInTest } from "../../helpers/process.js";
import { testAdmin, uniqueName, waitForCaughtUp } from "../../helpers/stack.js";
import { makeTestCa, type TestCa } from "../../helpers/testCertificates.js";

let admin: ClusterAdmin;
let server: PrivatePostgres;
let ca: TestCa;
let otherCa: TestCa;

beforeAll(async () => {
  ca = makeTestCa("replayable test CA");
  otherCa = makeTestCa("another CA");
  server = await startPrivatePostgres({
    tls: { ...ca.issue("localhost", ["DNS:localhost", "IP:127.0.0.1"]), clientCaFile: ca.certFile },
    // Role replayable_cert is admitted only with a client certificate of the test CA naming it.
    hba: ["hostssl all replayable_cert 127.0.0.0/8 cert"],
    listenAddresses: ["127.0.0.1", "127.0.0.2"],
  });
  admin = await testAdmin();
});

afterAll(async () => {
  server?.destroy();
  ca?.remove();
  otherCa?.remove();
  await admin?.close();
});

/** A URL of the private server's database `db` as `user`, with `query` (TLS parameters). */
function url(query: string, options: { db?: string; host?: string; user?: string } = {}): string {
  const { db = "postgres", host = "127.0.0.1", user = "postgres" } = options;
  return `postgres://${user}@${host}:${server.port}/${db}${query === "" ? "" : `?${query}`}`;
}
const verifyFull = () => `sslmode=verify-full&sslrootcert=${ca.certFile}`;

/** Runs statements as the superuser over verify-full. */
async function sql(db: string, ...statements: string[]): Promise<void> {
  const client = new pg.Client(connectionConfig(url(verifyFull(), { db })));
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** The runtime role's grants as docs/security.md lists them (the block after `<!-- runtime-grants -->`). */
function documentedRuntimeGrants(role: string, db: string): string[] {
  const doc = readFileSync(new URL("../../../docs/security.md", import.meta.url), "utf8");
  const block = /<!-- runtime-grants -->\s*```sql\n([\s\S]*?)```/.exec(doc)?.[1];
  if (block === undefined) throw new Error("docs/security.md has no runtime-grants block");
  return block
    .split(";")
    .map((s) => s.replace(/--.*$/gm, "").trim())
    .filter((s) => s !== "")
    .map((s) => s.replaceAll("replayable_app", role).replaceAll("mydb", db));
}

describe("PostgreSQL over TLS", () => {
  it("migrate and run with sslmode=verify-full: a role with the documented grants derives the exact ledger", async () => {
    const db = uniqueName("tls");
    const role = uniqueName("app");
    await sql("postgres", `CREATE DATABASE ${db}`);
    const migrated = await runCli(["migrate", "--projection", "ledger"], {
      DATABASE_URL: url(verifyFull(), { db }),
    });
    expect(migrated.stderr).toBe("");
    expect(migrated.code).toBe(0);
    await sql(db, `CREATE ROLE ${role} LOGIN`, ...documentedRuntimeGrants(role, db));

    const topic = uniqueName("tls");
    const group = uniqueName("g");
    const stream = await produceLedger(admin, topic, {
      count: 80,
      partitions: 2,
      seed: 13,
      duplicateRate: 0.1,
    });
    const runtimeUrl = url(verifyFull(), { db, user: role });
    startCliInTest(["run", "--projection", "ledger", "--topic", topic, "--group", group, "--no-migrate"], {
      DATABASE_URL: runtimeUrl,
    });
    await waitForCaughtUp(admin, group, topic);
    const pool = createPool({ connectionString: url(verifyFull(), { db }), max: 1 });
    try {
      expect(await ledgerChecksumOf(pool)).toBe(stream.checksum);
      const ssl = await pool.query<{ ssl: boolean }>(
        "SELECT bool_and(ssl) AS ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE usename = $1",
        [role],
      );
      expect(ssl.rows[0]?.ssl).toBe(true);
    } finally {
      await pool.end();
    }

    // Without one grant the same role is refused at start-up, the GRANT named, no record read.
    await sql(db, `REVOKE UPDATE ON ledger.ledger_accounts FROM ${role}`);
    const otherGroup = uniqueName("g");
    const refused = await runCli(
      ["run", "--projection", "ledger", "--topic", topic, "--group", otherGroup, "--no-migrate"],
      { DATABASE_URL: runtimeUrl },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`GRANT UPDATE ON ledger.ledger_accounts TO ${role};`);
    expect((await admin.groupCommittedOffsets(otherGroup)).length).toBe(0);
    // With migrations on (run's default) the runtime role is told it cannot migrate.
    const migrating = await runCli(
      ["run", "--projection", "ledger", "--topic", topic, "--group", otherGroup],
      {
        DATABASE_URL: runtimeUrl,
      },
    );
    expect(migrating.code).toBe(2);
    expect(migrating.stderr).toContain(`GRANT CREATE ON DATABASE ${db} TO ${role};`);
    expect(migrating.stderr).toContain("--no-migrate");
  });

  it("plaintext is refused: the error says to add sslmode=verify-full&sslrootcert", async () => {
    for (const args of [
      ["migrate"],
      ["run", "--group", uniqueName("g")],
      ["run", "--no-migrate", "--group", uniqueName("g")],
      ["status", "--projection", "ledger"],
      ["dead-letters", "list", "--projection", "ledger"],
    ]) {
      const plain = await runCli(args, { DATABASE_URL: url("") });
      expect(plain.code, plain.stderr).toBe(2);
      expect(plain.stderr).toMatch(/no pg_hba\.conf entry .*no encryption/);
      expect(plain.stderr).toContain("add sslmode=verify-full&sslrootcert=<file of the CA");
    }
    const disabled = await runCli(["migrate"], { DATABASE_URL: url("sslmode=disable") });
    expect(disabled.code).toBe(2);
    expect(disabled.stderr).toContain("accepts only TLS connections");
  });

  it("a server without TLS refuses sslmode=require, and the error says so", async () => {
    const plainServer = await startPrivatePostgres();
    onTestFinished(() => plainServer.destroy());
    const refused = await runCli(["migrate"], { DATABASE_URL: `${plainServer.url}?sslmode=require` });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/does not accept TLS \(ssl = off in its postgresql\.conf\)/);
  });

  it("a server certificate from another CA is refused, naming sslrootcert", async () => {
    const wrong = await runCli(["migrate"], {
      DATABASE_URL: url(`sslmode=verify-full&sslrootcert=${otherCa.certFile}`),
    });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/not signed by a CA that DATABASE_URL trusts .*set sslrootcert=/);
    const missing = await runCli(["migrate"], {
      DATABASE_URL: url("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"),
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("sslrootcert=/nonexistent/ca.pem: no such file");
  });

  it("require encrypts without verifying; verify-full checks the host name, verify-ca only the chain", async () => {
    const require = await runCli(["migrate"], { DATABASE_URL: url("sslmode=require") });
    expect(require.stderr).toBe("");
    expect(require.code).toBe(0);
    const requireWrongCa = await runCli(["migrate"], {
      DATABASE_URL: url(`sslmode=require&sslrootcert=${otherCa.certFile}`),
    });
    expect(requireWrongCa.code).toBe(2);

    const otherName = await runCli(["migrate"], { DATABASE_URL: url(verifyFull(), { host: "127.0.0.2" }) });
    expect(otherName.code).toBe(2);
    expect(otherName.stderr).toMatch(/does not name the host .*127\.0\.0\.2.*sslmode=verify-ca/);
    const chainOnly = await runCli(["migrate"], {
      DATABASE_URL: url(`sslmode=verify-ca&sslrootcert=${ca.certFile}`, { host: "127.0.0.2" }),
    });
    expect(chainOnly.stderr).toBe("");
    expect(chainOnly.code).toBe(0);
  });

  it("a client certificate (sslcert, sslkey; an encrypted key with sslpassword) admits a role the server admits only so", async () => {
    await sql("postgres", "CREATE ROLE replayable_cert LOGIN SUPERUSER");
    const client = ca.issue("replayable_cert", [], { client: true });
    const asCert = (query: string) => url(`${verifyFull()}${query}`, { user: "replayable_cert" });
    const without = await runCli(["migrate"], { DATABASE_URL: asCert("") });
    expect(without.code).toBe(2);
    expect(without.stderr).toMatch(
      /wants a client certificate .*add sslcert=<certificate file>&sslkey=<key file>/,
    );
    const withCert = await runCli(["migrate"], {
      DATABASE_URL: asCert(`&sslcert=${client.certFile}&sslkey=${client.keyFile}`),
    });
    expect(withCert.stderr).toBe("");
    expect(withCert.code).toBe(0);

    const password = "key-pass-7f3a";
    const encrypted = `${client.keyFile}.encrypted`;
    writeFileSync(
      encrypted,
      createPrivateKey(readFileSync(client.keyFile)).export({
        type: "pkcs8",
        format: "pem",
        cipher: "aes-256-cbc",
        passphrase: password,
      }),
    );
    const decrypted = await runCli(["migrate"], {
      DATABASE_URL: asCert(`&sslcert=${client.certFile}&sslkey=${encrypted}&sslpassword=${password}`),
      LOG_LEVEL: "debug",
    });
    expect(decrypted.code).toBe(0);
    expect(decrypted.stderr).not.toContain(password);
    const wrong = await runCli(["migrate"], {
      DATABASE_URL: asCert(`&sslcert=${client.certFile}&sslkey=${encrypted}&sslpassword=wrong-${password}`),
    });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("sslpassword does not decrypt it");
    expect(wrong.stderr).not.toContain(password);
  });
});
