import { describe, expect, it } from "vitest";
import { explainConnectionError } from "../../../src/db/connectionProblem.js";
import {
  grantStatements,
  privilegeChecks,
  quoteName,
  versionedRunChecks,
} from "../../../src/db/privileges.js";

describe("privilegeChecks and grantStatements", () => {
  it("asks a runtime role for replayable's tables and the projection's, one GRANT per object", () => {
    const checks = privilegeChecks("apply", ["orders.order_totals"]);
    const grants = grantStatements(checks, "app", "shop");
    expect(grants).toEqual([
      "GRANT USAGE ON SCHEMA replayable TO app;",
      "GRANT SELECT, INSERT, UPDATE ON replayable.checkpoints TO app;",
      "GRANT SELECT, INSERT ON replayable.processed_events TO app;",
      "GRANT SELECT, INSERT, UPDATE ON replayable.dead_letters TO app;",
      "GRANT SELECT ON replayable.rebuilds TO app;",
      "GRANT SELECT, INSERT ON replayable.projection_topics TO app;",
      "GRANT USAGE ON SEQUENCE replayable.dead_letters_id_seq TO app;",
      "GRANT USAGE ON SCHEMA orders TO app;",
      "GRANT SELECT, INSERT, UPDATE, DELETE ON orders.order_totals TO app;",
    ]);
  });

  it("adds TRUNCATE and DELETE for rebuild, only event ids for prune, CREATE for migrations", () => {
    const rebuild = grantStatements(privilegeChecks("rebuild", ["t"]), "app", "db");
    expect(rebuild).toContain("GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON t TO app;");
    expect(rebuild).toContain("GRANT SELECT, INSERT, UPDATE, DELETE ON replayable.checkpoints TO app;");
    expect(grantStatements(privilegeChecks("prune", ["t"]), "app", "db")).toEqual([
      "GRANT USAGE ON SCHEMA replayable TO app;",
      "GRANT SELECT, DELETE ON replayable.processed_events TO app;",
      "GRANT SELECT ON replayable.projection_topics TO app;",
    ]);
    expect(grantStatements(privilegeChecks("migrate", []), "owner", "db")).toEqual([
      "GRANT CREATE ON DATABASE db TO owner;",
      "GRANT CREATE ON SCHEMA replayable TO owner;",
    ]);
  });

  it("asks a versioned run for the version registry and the version's migrations table (issue 26 item 11)", () => {
    expect(grantStatements(versionedRunChecks("__drizzle_migrations_orders@v2"), "app", "db")).toEqual([
      "GRANT USAGE ON SCHEMA replayable TO app;",
      "GRANT SELECT ON replayable.projection_versions TO app;",
      'GRANT SELECT ON replayable."__drizzle_migrations_orders@v2" TO app;',
    ]);
  });

  it("quotes names that need quoting", () => {
    expect(quoteName("Orders.order totals")).toBe('"Orders"."order totals"');
    expect(quoteName("ledger.ledger_accounts")).toBe("ledger.ledger_accounts");
  });
});

describe("explainConnectionError", () => {
  const url = "postgres://app:secret@db:5432/app";
  const explain = (error: object) => explainConnectionError(error, url)?.message;

  it("tells to add sslmode=verify-full when the server accepts only TLS", () => {
    const message = explain(
      Object.assign(
        new Error('no pg_hba.conf entry for host "10.0.0.1", user "app", database "app", no encryption'),
        { code: "28000" },
      ),
    );
    expect(message).toMatch(
      /accepts only TLS connections .*add sslmode=verify-full&sslrootcert=<file of the CA/,
    );
    expect(message).toContain("postgres://app:***@db:5432/app");
    expect(message).not.toContain("secret");
  });

  it("names sslrootcert for an unknown CA and verify-ca for a host name mismatch", () => {
    expect(
      explain(
        Object.assign(new Error("self-signed certificate in certificate chain"), {
          code: "SELF_SIGNED_CERT_IN_CHAIN",
        }),
      ),
    ).toMatch(/not signed by a CA that DATABASE_URL trusts .*set sslrootcert=/);
    expect(
      explain(
        Object.assign(new Error("Hostname/IP does not match"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" }),
      ),
    ).toMatch(/does not name the host .*sslmode=verify-ca/);
  });

  it("names pg_hba.conf for an entry missing over TLS, and the client certificate the server wants", () => {
    const hba = 'no pg_hba.conf entry for host "10.0.0.1", user "app", database "app", SSL encryption';
    expect(explain(Object.assign(new Error(hba), { code: "28000" }))).toMatch(
      /pg_hba\.conf admits no such connection .*hostssl entry/,
    );
    expect(
      explain(Object.assign(new Error("connection requires a valid client certificate"), { code: "28000" })),
    ).toMatch(/wants a client certificate .*add sslcert=<certificate file>&sslkey=<key file>/);
    expect(
      explain(Object.assign(new Error('password authentication failed for user "app"'), { code: "28P01" })),
    ).toMatch(/check the user and password of DATABASE_URL/);
  });

  it("names PGSSLMODE when it, not DATABASE_URL, asked for TLS the server does not offer", () => {
    const noTls = new Error("The server does not support SSL connections");
    expect(explainConnectionError(noTls, url, { PGSSLMODE: "require" })?.message).toContain(
      "but PGSSLMODE=require (read because DATABASE_URL has no sslmode) asks for it",
    );
    expect(
      explainConnectionError(noTls, `${url}?sslmode=require`, { PGSSLMODE: "require" })?.message,
    ).toContain("but DATABASE_URL's sslmode asks for it");
  });

  it("leaves an outage alone", () => {
    expect(
      explainConnectionError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), url),
    ).toBeUndefined();
  });
});
