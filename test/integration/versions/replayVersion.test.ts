/**
 * `replay` of a versioned projection acts on the version whose consumer group `--group` names: its
 * checkpoints predict the duplicates (regression: replay read the checkpoints stored under the
 * bare projection name, which a versioned projection never writes, and predicted every re-read
 * record as a first apply), and a group of no version is refused, naming the versions' groups.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { testAdmin, uniqueName } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

interface ReplayJson {
  outcome: string;
  projection: string;
  totals: { duplicates: string; firstApplies: string; skipped: string };
}

describe("replay of a versioned projection", () => {
  it("predicts from the checkpoints of the version whose group it resets, and refuses a group of no version", async () => {
    const bg = await versionedStack(admin, "bg", 30);
    const { name, topic, cli } = bg;
    const run = bg.run([]);
    await bg.waitForCaughtUp(1);
    run.signal("SIGTERM");
    expect((await run.exited).code).toBe(0);

    const args = ["replay", "--projection", name, "--topic", topic, "--to-earliest", "--output", "json"];
    const replay = await cli([...args, "--group", `${name}-v1`, "--execute"]);
    expect(replay.code, replay.stderr).toBe(0);
    const json = JSON.parse(replay.stdout) as ReplayJson;
    expect(json).toMatchObject({
      outcome: "executed",
      projection: `${name}@v1`,
      totals: { duplicates: "30", firstApplies: "0", skipped: "0" },
    });

    const otherGroup = uniqueName("g");
    const other = await cli([...args, "--group", otherGroup]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(
      `--group: version 1 of projection ${name} consumes as group ${name}-v1, not ${otherGroup}`,
    );
  });
});
