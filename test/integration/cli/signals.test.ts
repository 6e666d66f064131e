/**
 * Signals as `run` receives them in practice: one SIGTERM delivered twice at once (to the process
 * and to its process group, as `timeout` does) still stops gracefully with exit 0.
 */
import { describe, expect, it } from "vitest";
import { startCli } from "../../helpers/process.js";
import { uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

async function startedMember() {
  const topic = uniqueName("signals");
  await stack.admin.createTopic(topic, 1);
  const member = startCli([
    "run",
    "--topic",
    topic,
    "--group",
    uniqueName("g"),
    "--database-url",
    stack.db.url,
  ]);
  await member.waitForStderr('"msg":"consumer started"');
  return member;
}

describe("run and signals", () => {
  it("a SIGTERM delivered twice at once stops gracefully with exit 0 (regression: exited 130)", async () => {
    const member = await startedMember();
    member.child.kill("SIGTERM");
    // The second copy arrives once the first is being handled (two copies sent together merge).
    await member.waitForStderr("stopping gracefully");
    member.child.kill("SIGTERM");
    expect(await member.exited).toEqual({ code: 0, signal: null });
    expect(member.stderr()).toContain("consumer stopped");
  });
});
