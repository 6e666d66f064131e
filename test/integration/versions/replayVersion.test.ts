/**
 * `replay` of a versioned projection acts on the version whose consumer group `--group` names: its
 * checkpoints predict the duplicates (regression: replay read the checkpoints stored under the
 * bare projection name, which a versioned projection never writes, and predicted every re-read
 * record as a first apply), and a group of no version is refused, naming the versions' groups.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { KafkaAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, startCliInTest } from "../../helpers/process.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitForCaughtUp,
} from "../../helpers/stack.js";
import { sales, tempFolder, writeVersionedConfig } from "../../helpers/versionedConfig.js";

let admin: KafkaAdmin;
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
    const dir = tempFolder();
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const name = uniqueName("bg");
    const topic = uniqueName("bg-topic");
    writeVersionedConfig(dir, name, topic);
    const env = { DATABASE_URL: db.url };
    await admin.createTopic(topic, 2);
    await produceRecords(testKafka(), topic, sales(30));
    expect((await runCli(["migrate"], env, { cwd: dir })).code).toBe(0);
    const run = startCliInTest(["run"], env, { cwd: dir });
    await waitForCaughtUp(admin, `${name}-v1`, topic);
    run.signal("SIGTERM");
    expect((await run.exited).code).toBe(0);

    const args = ["replay", "--projection", name, "--topic", topic, "--to-earliest", "--output", "json"];
    const replay = await runCli([...args, "--group", `${name}-v1`, "--execute"], env, { cwd: dir });
    expect(replay.code, replay.stderr).toBe(0);
    const json = JSON.parse(replay.stdout) as ReplayJson;
    expect(json).toMatchObject({
      outcome: "executed",
      projection: `${name}@v1`,
      totals: { duplicates: "30", firstApplies: "0", skipped: "0" },
    });

    const otherGroup = uniqueName("g");
    const other = await runCli([...args, "--group", otherGroup], env, { cwd: dir });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(
      `--group: version 1 of projection ${name} consumes as group ${name}-v1, not ${otherGroup}`,
    );
  });
});
