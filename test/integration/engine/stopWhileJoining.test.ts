/**
 * Regression: SIGTERM while the member's JoinGroup is still waiting for the group to rebalance.
 * The stop closed the connection of the pending JoinGroup; KafkaJS took that for a crash and
 * restarted the consumer after the stop, so the process hung until the shutdown timeout and
 * exited 1 (seen in `make demo` when the group caught up before the second member had joined).
 * With KIP-848 groups (KAFKA_GROUP_PROTOCOL=consumer) there is no JoinGroup: B's first heartbeat
 * gets it a target assignment that waits for A to give partitions up, and the group is Reconciling
 * (KIP-848 "Group states") until A's batch ends; B is stopped in that state.
 */
import { describe, expect, it } from "vitest";
import { produceLedger } from "../../helpers/ledger.js";
import { startCli, type CliProcess } from "../../helpers/process.js";
import { TEST_CLIENT_ENV, uniqueName, waitFor, useStack } from "../../helpers/stack.js";

const stack = useStack();
/** The group's state while B waits for A: classic's JoinGroup, or KIP-848's reconciliation. */
const REBALANCING =
  TEST_CLIENT_ENV.KAFKA_GROUP_PROTOCOL === "consumer" ? "Reconciling" : "PreparingRebalance";

describe("stopping a member", () => {
  it("SIGTERM while its JoinGroup waits for a rebalance: exits 0, the consumer is not restarted", async () => {
    const topic = uniqueName("stop-joining");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 20, partitions: 2, seed: 41 });
    const args = ["run", "--projection", "ledger", "--topic", topic, "--group", group];
    const env = { DATABASE_URL: stack.db.url, REPLAYABLE_SHUTDOWN_TIMEOUT_MS: "20000" };
    // A holds the group in a long first batch, so B's JoinGroup waits for A to rejoin. The sleep
    // is long (45 s, under the 60 s rebalance timeout) because B's start-up on a loaded machine
    // took more than the 15 s it was: B joined after A's batch and the rebalance was over at once.
    // A also heartbeats only every 20 s (session 60 s): it learns of B's join at its next
    // heartbeat and rejoins then, so the rebalance B waits in lasts up to 20 s, not up to the 3 s
    // default, which a loaded CI machine's polls missed once.
    const a = startCli(args, {
      ...env,
      REPLAYABLE_FAILPOINTS: "in-apply=sleep:45000@1",
      REPLAYABLE_SESSION_TIMEOUT_MS: "60000",
      REPLAYABLE_HEARTBEAT_INTERVAL_MS: "20000",
    });
    let b: CliProcess | undefined;
    try {
      await a.waitForStderr("failpoint in-apply: sleep");
      b = startCli(args, env);
      await b.metricsPort();
      await waitFor(
        `B's join to put the group in ${REBALANCING}`,
        async () => ((await stack.admin.describeGroup(group)).state === REBALANCING ? true : undefined),
        60_000,
        50,
      );
      b.child.kill("SIGTERM");
      expect(await b.exited).toEqual({ code: 0, signal: null });
      expect(b.stderr()).not.toContain("graceful stop timed out");
      expect(b.stderr()).not.toContain("Restarting the consumer");
    } finally {
      // A is still in its sleep: a SIGTERM would wait for it (or the shutdown timeout).
      a.kill();
      b?.kill();
      await a.exited;
    }
  });
});
