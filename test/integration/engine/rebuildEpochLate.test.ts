/**
 * Regression (issue 25, item 1 "Loss: the rebuild epoch can be read late"), end to end: a member
 * rejoins after a freeze, and its new generation's fetcher holds the records after the committed
 * offset while the generation's rebuild epoch is still being read (the failpoint delays the read,
 * as a busy pool or PostgreSQL away for a moment does). The member freezes again past its session
 * timeout, its session holding the shared advisory lock ends (its other sessions live), and a rebuild resets
 * the group and empties the projection. Woken up, the late read must not hand that generation the
 * new epoch: its batches would move the checkpoint past the records the rebuild reset, which would
 * then count as duplicates (lost). Checked against the model: the ledger checksum and the event ids
 * of every record produced.
 */
import { expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { generateLedgerStream } from "../../../src/projections/ledger/generate.js";
import { eventIdCount, ledgerChecksumOf } from "../../helpers/ledger.js";
import { runCli, startCli } from "../../helpers/process.js";
import { runArgs } from "../../helpers/replay.js";
import { testKafka, uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";

const stack = useStack();

async function waitForEmptyGroup(group: string): Promise<void> {
  await waitFor(`group ${group} to have no members`, async () =>
    (await stack.admin.describeGroup(group)).members.length === 0 ? true : undefined,
  );
}

/**
 * Ends the member's session holding the shared advisory lock (`idle_session_timeout`, an operator's
 * `pg_terminate_backend`, a connection cut), and only that one: the main pool's sessions live on.
 */
async function endLockSession(): Promise<number> {
  const r = await stack.db.pool.query<{ ended: boolean }>(
    `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'replayable:ledger:lock'`,
  );
  return r.rows.filter((row) => row.ended).length;
}

it("a generation whose epoch read ends after a rebuild applies nothing it fetched before the rebuild: nothing lost, nothing applied twice", async () => {
  const { admin, db } = stack;
  const topic = uniqueName("epoch-late");
  const group = uniqueName("g");
  await admin.createTopic(topic, 1);
  const stream = generateLedgerStream({ count: 400, duplicateRate: 0.05, seed: 25 });
  const first = stream.records.slice(0, 200);
  const second = stream.records.slice(200);
  // The second generation's epoch read (pass 2) waits 4 s: the test freezes the member meanwhile.
  const member = startCli(runArgs(db.url, topic, group), {
    REPLAYABLE_SESSION_TIMEOUT_MS: "6000",
    REPLAYABLE_HEARTBEAT_INTERVAL_MS: "500",
    REPLAYABLE_FAILPOINTS: "rebuild-epoch-read=sleep:4000@2",
    // KafkaJS's request log (or the platformatic feed's) shows when the fetch after the join was handed over.
    LOG_LEVEL: "debug",
  });
  onTestFinished(async () => {
    member.signal("SIGCONT");
    member.kill();
    await member.exited;
  });
  await produceRecords(testKafka(), topic, first);
  await waitForCaughtUp(admin, group, topic);

  // A freeze past the session timeout; the second part arrives meanwhile. Woken, the member rejoins
  // (generation 2), and its fetcher gets the second part while the epoch read waits.
  member.signal("SIGSTOP");
  await waitForEmptyGroup(group);
  await produceRecords(testKafka(), topic, second);
  member.signal("SIGCONT");
  await member.waitForStderr("failpoint rebuild-epoch-read: sleep");
  // The fetcher sends its next request only once the engine has taken the fetch's batches.
  const joined = member.stderr().indexOf("failpoint rebuild-epoch-read: sleep");
  await waitFor(
    "the fetch after the join handed over",
    () =>
      // KafkaJS: its next request after a fetch response; the platformatic feed logs the handover.
      /Response Fetch\(key: 1[\s\S]*"msg":"Request |"msg":"fetch handed over"/.test(
        member.stderr().slice(joined),
      )
        ? true
        : undefined,
    30_000,
    20,
  );
  member.signal("SIGSTOP");

  // Frozen again: removed from the group, its lock session gone, the projection rebuilt.
  await waitForEmptyGroup(group);
  expect(await endLockSession()).toBe(1);
  const rebuilt = await runCli([
    "rebuild",
    "--projection",
    "ledger",
    "--group",
    group,
    "--topic",
    topic,
    "--database-url",
    db.url,
    "--execute",
  ]);
  expect(rebuilt.code, rebuilt.stderr).toBe(0);

  // Woken up: the late read ends at once.
  member.signal("SIGCONT");
  await waitForCaughtUp(admin, group, topic);
  expect(await ledgerChecksumOf(db.pool), member.stderr().split("\n").slice(-40).join("\n")).toBe(
    stream.checksum,
  );
  expect(await eventIdCount(db.pool)).toBe(stream.events);
  expect(member.child.exitCode).toBeNull();
});
