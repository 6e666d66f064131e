/**
 * `status` reads the checkpoints of --projection, by default the projection named like the group,
 * as `replay` does (regression: `status --group github` showed the ledger projection's checkpoints).
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/process.js";
import { BROKERS, uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

describe("status", () => {
  it("defaults --projection to the group when the group names a projection, and says which it shows", async () => {
    const topic = uniqueName("status");
    await stack.admin.createTopic(topic, 1);
    const env = { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url };

    const json = await runCli(["status", "--group", "github", "--topic", topic, "--output", "json"], env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ groupId: "github", projection: "github" });

    const table = await runCli(["status", "--group", "github", "--topic", topic], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain("group github, projection github");

    const unknown = await runCli(["status", "--group", uniqueName("g"), "--topic", topic], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("is not the name of a projection");
  });
});
