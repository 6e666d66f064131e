/**
 * /healthz and /readyz of a running `replayable run` through a PostgreSQL outage. The outage is
 * a private PostgreSQL server of this test's own: the shared server stays up for the others.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { produceLedger } from "../../helpers/ledger.js";
import { startPrivatePostgres, type PrivatePostgres } from "../../helpers/privatePostgres.js";
import { startCli } from "../../helpers/process.js";
import { testAdmin, testKafka, uniqueName, waitFor, waitForCaughtUp } from "../../helpers/stack.js";
import pg from "pg";

let admin: ClusterAdmin;
let server: PrivatePostgres;

beforeAll(async () => {
  admin = await testAdmin();
  server = await startPrivatePostgres();
});

afterAll(async () => {
  server?.destroy();
  await admin?.close();
});

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

describe("/readyz", () => {
  it("turns 503 with the reason when PostgreSQL is stopped, and 200 again when it is back", async () => {
    const topic = uniqueName("readyz");
    const group = uniqueName("g");
    const stream = await produceLedger(admin, topic, { count: 40, partitions: 1, seed: 41 });
    const run = startCli(
      ["run", "--projection", "ledger", "--topic", topic, "--group", group, "--database-url", server.url],
      { REPLAYABLE_RETRY_MAX_MS: "1000" },
    );
    onTestFinished(() => run.kill());
    const port = await run.metricsPort();
    await waitFor("/readyz to answer 200", async () =>
      (await get(port, "/readyz")).status === 200 ? true : undefined,
    );
    expect(await get(port, "/readyz")).toEqual({ status: 200, body: "ready\n" });
    await waitForCaughtUp(admin, group, topic);

    server.stop();
    const down = await waitFor("/readyz to answer 503", async () => {
      const answer = await get(port, "/readyz");
      return answer.status === 503 ? answer : undefined;
    });
    expect(down.body).toMatch(/^not ready: PostgreSQL unreachable: /);
    // The process is alive all along.
    expect(await get(port, "/healthz")).toEqual({ status: 200, body: "ok\n" });

    server.start();
    await waitFor("/readyz to answer 200 again", async () =>
      (await get(port, "/readyz")).status === 200 ? true : undefined,
    );
    // And the member applies again: records produced after the outage arrive.
    const late = generateLedgerStream({ count: 10, duplicateRate: 0, seed: 42, idPrefix: "late-" });
    await produceRecords(testKafka(), topic, late.records);
    await waitForCaughtUp(admin, group, topic);
    const pool = new pg.Pool({ connectionString: server.url, max: 1 });
    try {
      const applied = await pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM replayable.processed_events WHERE projection = 'ledger'",
      );
      expect(Number(applied.rows[0]!.n)).toBe(stream.events + late.events);
    } finally {
      await pool.end();
    }
    run.child.kill("SIGTERM");
    expect(await run.exited).toEqual({ code: 0, signal: null });
  });
});
