/**
 * The changed github projection of examples/github-new-column/ run by the CLI with `--config`, as
 * a user runs it: `migrate` makes its version 1 with the new column, `run` applies the 800 GH
 * Archive events, and `last_event_at` in the view equals the newest `created_at` per (repo, type)
 * computed straight from the file; a record without a valid `created_at` is dead-lettered.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import { runCli, startCliInTest } from "../../helpers/process.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
} from "../../helpers/stack.js";

const FILE = "data/github-events/2021-07-21-gharchive-800.jsonl";
const CONFIG = resolve("examples/github-new-column/replayable.config.ts");

describe("examples/github-new-column", () => {
  it("applies the events with last_event_at = the newest created_at per (repo, type) from the file", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const admin = await testAdmin();
    onTestFinished(() => admin.close());
    const topic = uniqueName("github-new-column");
    const group = uniqueName("g");
    const env = { DATABASE_URL: db.url };
    const lines = readFileSync(FILE, "utf8")
      .split("\n")
      .filter((l) => l !== "");
    const bad = JSON.stringify({
      id: "bad-1",
      type: "PushEvent",
      actor: "a",
      repo: "o/r",
      payload: { size: 1 },
    });
    await admin.createTopic(topic, 3);
    await produceRecords(
      testKafka(),
      topic,
      [...lines, bad].map((value, i) => ({ key: String(i % 7), value })),
    );

    const migrated = await runCli(["migrate", "--config", CONFIG, "--group", group], env);
    expect(migrated.stderr).toBe("");
    expect(migrated.code).toBe(0);
    const run = startCliInTest(["run", "--projection", "github", "--topic", topic, "--config", CONFIG], env);
    await waitForCaughtUp(admin, `${group}-v1`, topic);
    run.signal("SIGTERM");
    expect((await run.exited).code).toBe(0);

    const newest = new Map<string, number>();
    for (const line of lines) {
      const e = JSON.parse(line) as { type: string; repo: string; created_at: string };
      const key = `${e.repo} ${e.type}`;
      newest.set(key, Math.max(newest.get(key) ?? -Infinity, Date.parse(e.created_at)));
    }
    const rows = await db.pool.query<{ repo: string; event_type: string; events: string; last: Date }>(
      "SELECT repo, event_type, events, last_event_at AS last FROM github.github_repo_activity",
    );
    expect(new Map(rows.rows.map((r) => [`${r.repo} ${r.event_type}`, r.last.getTime()]))).toEqual(newest);
    expect(rows.rows.reduce((n, r) => n + Number(r.events), 0)).toBe(800);
    const dead = await waitFor("the dead letter", async () => {
      const r = await db.pool.query<{ error_message: string }>(
        "SELECT error_message FROM replayable.dead_letters WHERE projection = 'github@v1'",
      );
      return r.rows.length > 0 ? r.rows : undefined;
    });
    expect(dead).toHaveLength(1);
    expect(dead[0]?.error_message).toContain("field created_at must be a UTC time");
  });
});
