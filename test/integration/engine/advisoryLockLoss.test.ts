/**
 * Regression (issue "Effectively once on a real cluster", fix 10): losing the PostgreSQL session
 * that holds the projection's shared advisory lock logged a warning for every terminated session,
 * so one outage (PostgreSQL restarting, sessions terminated one after another) filled the log.
 * It now warns once per outage; the lock is taken again each time.
 */
import { expect, it } from "vitest";
import { produceLedger } from "../../helpers/ledger.js";
import { startCliInTest } from "../../helpers/process.js";
import { runArgs } from "../../helpers/replay.js";
import { uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

/** The pids of the sessions holding the ledger projection's shared advisory lock. */
async function lockSessions(): Promise<number[]> {
  const r = await stack.db.pool.query<{ pid: number }>(
    `SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
      WHERE a.datname = current_database() AND a.application_name = 'replayable:ledger:lock'
        AND l.locktype = 'advisory' AND l.granted`,
  );
  return r.rows.map((row) => row.pid);
}

it("losing the advisory-lock session three times in one outage logs one warning, and the lock is taken again each time", async () => {
  const topic = uniqueName("lock-loss");
  const group = uniqueName("g");
  await produceLedger(stack.admin, topic, { count: 20, partitions: 1, seed: 3 });
  const cli = startCliInTest(runArgs(stack.db.url, topic, group));
  await waitForCaughtUp(stack.admin, group, topic);
  // A terminated session can still be listed for a moment: never pick one twice.
  const terminated = new Set<number>();
  const liveLockSession = async () => {
    return (await lockSessions()).find((pid) => !terminated.has(pid));
  };
  for (let i = 1; i <= 3; i++) {
    const pid = await waitFor(`the advisory-lock session (${i})`, liveLockSession);
    terminated.add(pid);
    await stack.db.pool.query("SELECT pg_terminate_backend($1)", [pid]);
  }
  await waitFor("the lock taken again after the third loss", liveLockSession);
  await waitFor("three 'taken again' lines", () =>
    cli
      .stderr()
      .split("\n")
      .filter((l) => l.includes("advisory lock taken again")).length === 3
      ? true
      : undefined,
  );
  const warnings = cli
    .stderr()
    .split("\n")
    .filter((l) => l.includes("lost the PostgreSQL session holding the projection's shared advisory lock"));
  expect(warnings).toHaveLength(1);
  expect(cli.child.exitCode).toBeNull();
});
