/**
 * A password in DATABASE_URL never shows: not in any log line of `replayable run` (debug level,
 * KafkaJS's lines included), not in /metrics or /readyz, not when the connection fails.
 * PostgreSQL is a private server whose `postgres` role needs the password (scram-sha-256).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceLedger } from "../../helpers/ledger.js";
import { startPrivatePostgres, type PrivatePostgres } from "../../helpers/privatePostgres.js";
import { runCli, startCli } from "../../helpers/process.js";
import { testAdmin, uniqueName, waitFor, waitForCaughtUp } from "../../helpers/stack.js";

let admin: ClusterAdmin;
let server: PrivatePostgres;
/** Distinctive, with characters a URL must percent-encode. */
const password = `pw-${randomBytes(6).toString("hex")}/+!`;

beforeAll(async () => {
  admin = await testAdmin();
  server = await startPrivatePostgres({ password });
});

afterAll(async () => {
  server?.destroy();
  await admin?.close();
});

/** Every form the password could take in text. */
function forms(secret: string): string[] {
  return [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)];
}

function expectNoSecret(text: string, secret: string): void {
  for (const form of forms(secret)) expect(text).not.toContain(form);
}

describe("secrets", () => {
  it("a run with a password in DATABASE_URL never prints it: logs at debug, /metrics, /readyz", async () => {
    expect(server.url).toContain(encodeURIComponent(password));
    const topic = uniqueName("secret");
    const group = uniqueName("g");
    await produceLedger(admin, topic, { count: 30, partitions: 1, seed: 51, duplicateRate: 0.1 });
    const run = startCli(["run", "--projection", "ledger", "--topic", topic, "--group", group], {
      DATABASE_URL: server.url,
      LOG_LEVEL: "debug",
      REPLAYABLE_PROGRESS_INTERVAL_MS: "200",
    });
    onTestFinished(() => run.kill());
    const port = await run.metricsPort();
    await waitForCaughtUp(admin, group, topic);
    await waitFor("/readyz to answer 200", async () =>
      (await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined,
    );
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain("replayable_records_applied_total");
    expectNoSecret(metrics, password);

    // PostgreSQL goes away: /readyz quotes the connection error, and the logs report retries.
    server.stop();
    onTestFinished(() => server.start());
    const readyz = await waitFor("/readyz to answer 503", async () => {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      return response.status === 503 ? response.text() : undefined;
    });
    expectNoSecret(readyz, password);
    run.child.kill("SIGTERM");
    await run.exited;

    const stderr = run.stderr();
    // The test can fail: the URL was logged, with its password hidden.
    expect(stderr).toContain(`"database":"postgres://postgres:***@127.0.0.1:${server.port}/postgres"`);
    expect(stderr).toContain('"component":"kafkajs"');
    expect(stderr).toContain('"msg":"progress"');
    expectNoSecret(stderr, password);
    expectNoSecret(run.stdout(), password);
  });

  it("a failing connection never prints the password: wrong password, server down, malformed URL", async () => {
    const wrong = `wrong-${randomBytes(6).toString("hex")}`;
    const badPassword = await runCli(["run", "--projection", "ledger", "--group", uniqueName("g")], {
      DATABASE_URL: `postgres://postgres:${wrong}@127.0.0.1:${server.port}/postgres`,
      LOG_LEVEL: "debug",
    });
    expect(badPassword.code).toBe(2);
    expect(badPassword.stderr).toContain("password authentication failed");
    expectNoSecret(badPassword.stderr, wrong);

    server.stop();
    const down = await runCli(["run", "--projection", "ledger", "--group", uniqueName("g")], {
      DATABASE_URL: server.url,
      LOG_LEVEL: "debug",
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("ECONNREFUSED");
    expectNoSecret(down.stderr, password);
    server.start();

    const malformed = await runCli(["migrate"], {
      DATABASE_URL: `postgres://postgres:${wrong}@127.0.0.1:99999/postgres`,
      LOG_LEVEL: "debug",
    });
    expect(malformed.code).not.toBe(0);
    expect(malformed.stderr).not.toBe("");
    expectNoSecret(malformed.stderr, wrong);
  });
});
