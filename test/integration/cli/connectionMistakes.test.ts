/**
 * Addresses that reach nothing are named with the fix at the first connection (newcomer report,
 * issue 28), against the real PostgreSQL: a database that does not exist on the server (exit 2: no
 * retry creates it), an address where no PostgreSQL server answers (exit 1: a server that is
 * starting may answer on the next try), and KAFKA_BROKERS where no broker answers (exit 1, one
 * line; it printed a dozen KafkaJS JSON error lines after ten seconds of retries). Each printed
 * the client's bare error before.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/process.js";
import { ADMIN_DATABASE_URL, uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

describe("a DATABASE_URL that reaches no database", () => {
  it("names a database that does not exist and how to create it, exit 2", async () => {
    const url = new URL(ADMIN_DATABASE_URL);
    const name = uniqueName("no_such_db");
    url.pathname = `/${name}`;
    for (const command of [["status", "--projection", "ledger"], ["migrate"]]) {
      const result = await runCli(command, { DATABASE_URL: url.toString() });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(
        `(DATABASE_URL, --database-url or the config file's databaseUrl): database "${name}" does not exist; create it (createdb, or CREATE DATABASE) or correct the database name in DATABASE_URL`,
      );
    }
  });

  it("names an address where no PostgreSQL server answers, exit 1", async () => {
    const result = await runCli(["status", "--projection", "ledger"], {
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/test",
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(
      "replayable: no PostgreSQL server answers at 127.0.0.1:1 (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1), the address of DATABASE_URL (or --database-url, or the config file's databaseUrl): start the server, or correct the host and port",
    );
  });

  it("a command names KAFKA_BROKERS when no broker of it answers, at once, exit 1", async () => {
    const result = await runCli(["status", "--projection", "ledger"], {
      DATABASE_URL: stack.db.url,
      KAFKA_BROKERS: "127.0.0.1:1,127.0.0.1:2",
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(
      "replayable: no Kafka broker answers at 127.0.0.1:1 (ECONNREFUSED), 127.0.0.1:2 (ECONNREFUSED), the brokers of KAFKA_BROKERS (or --brokers, or the config file's kafkaBrokers): start them, or correct the addresses",
    );
    expect(result.stderr).not.toContain('"level":50');
  });

  // On @platformatic/kafka, run printed the library's bare "metadata failed 4 times." instead.
  it.each(["kafkajs", "platformatic"])(
    "run on %s names KAFKA_BROKERS, not PostgreSQL, when no broker answers after its retries, exit 1",
    async (client) => {
      const result = await runCli(["run", "--projection", "ledger", "--group", uniqueName("g")], {
        DATABASE_URL: stack.db.url,
        KAFKA_BROKERS: "127.0.0.1:1",
        KAFKA_CLIENT: client,
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain("replayable: no Kafka broker answers at 127.0.0.1:1 (ECONNREFUSED)");
      expect(result.stderr).not.toContain("cannot reach PostgreSQL");
    },
  );

  it("names a role the server does not have, exit 2", async () => {
    const url = new URL(stack.db.url);
    url.username = "no_such_role_7c1";
    const result = await runCli(["status", "--projection", "ledger"], { DATABASE_URL: url.toString() });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      'role "no_such_role_7c1" does not exist; check the user of DATABASE_URL (a role the server has, with LOGIN)',
    );
  });
});
