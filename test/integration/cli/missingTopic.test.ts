/**
 * Regression (newcomer report): `status --projection ledger` before its topic existed printed a raw
 * KafkaJS JSON error line and `replayable: This server does not host this topic-partition` (exit 1),
 * without naming the topic. A topic that does not exist is now a usage error (exit 2, as for
 * `run`) naming the topic, where its name came from and the fix, in `status`, `replay`, `rebuild`
 * and `prune` alike, and `run` and `replay` name where the name came from (the projection's own
 * topics, not REPLAYABLE_TOPICS or --topic). A topic the projection has checkpoints for that was deleted since is not the
 * operator's mistake: `status` reports it as a warning and shows the rest.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { produceLedger } from "../../helpers/ledger.js";
import { runCli } from "../../helpers/process.js";
import { BROKERS, uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

/** Fails on a KafkaJS error line (a JSON log line at level 50) in `stderr`. */
function expectNoErrorLogLine(stderr: string): void {
  expect(stderr).not.toContain('"level":50');
  expect(stderr).not.toContain("This server does not host this topic-partition");
}

describe("a topic that does not exist", () => {
  it("status of a projection whose default topic does not exist yet names the topic and the fix, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "replayable-missing-topic-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const name = uniqueName("orders");
    const topic = uniqueName("orders-topic");
    writeFileSync(
      join(dir, "replayable.config.ts"),
      `import { defineConfig, defineProjection } from "replayable";
export default defineConfig({
  kafkaBrokers: ${JSON.stringify(BROKERS)},
  projections: [
    defineProjection<string>({
      name: ${JSON.stringify(name)},
      dedupe: { kind: "offset" },
      topics: [${JSON.stringify(topic)}],
      tables: ["public.orders"],
      decode: (record) => record.value?.toString("utf8") ?? "",
      apply: async () => {},
    }),
  ],
});
`,
    );
    const result = await runCli(["status"], { DATABASE_URL: stack.db.url }, { cwd: dir });
    expectNoErrorLogLine(result.stderr);
    expect(result.stderr).toContain(
      `replayable: topic ${topic} (the default topics of projection ${name}; name others with --topic) does not exist on the cluster; create it first or correct the name`,
    );
    expect(result.code).toBe(2);
    // replay too (it named --topic, not given; newcomer finding), with --all-topics as the way out.
    const replay = await runCli(["replay", "--to-earliest"], { DATABASE_URL: stack.db.url }, { cwd: dir });
    expectNoErrorLogLine(replay.stderr);
    expect(replay.stderr).toContain(
      `replayable: topic ${topic} (the default topics of projection ${name}; name others with --topic, or use --all-topics) does not exist on the cluster; create it first or correct the name`,
    );
    expect(replay.code).toBe(2);
    // run names the same source (it named REPLAYABLE_TOPICS or --topic, neither of them set).
    await stack.db.pool.query("CREATE TABLE IF NOT EXISTS public.orders (id text)");
    const run = await runCli(["run", "--no-migrate"], { DATABASE_URL: stack.db.url }, { cwd: dir });
    expectNoErrorLogLine(run.stderr);
    expect(run.stderr).toContain(
      `replayable: topic ${topic} (the default topics of projection ${name}; name others with --topic) does not exist on the cluster; create it first or correct the name`,
    );
    expect(run.code).toBe(2);
    // Regression: the refused run recorded the topic as consumed, and status then warned, of every
    // group, that the group had committed offsets for a topic that never existed (newcomer finding).
    const consumed = await stack.db.pool.query(
      "SELECT topic FROM replayable.projection_topics WHERE projection = $1",
      [name],
    );
    expect(consumed.rows).toEqual([]);
    const again = await runCli(["status"], { DATABASE_URL: stack.db.url }, { cwd: dir });
    expect(again.stdout).not.toContain("WARNING");
    expect(again.code).toBe(2);
  });

  const missing = "no-such-topic-4b1e";
  const cases: [string, (group: string) => string[], string][] = [
    [
      "status",
      (g) => ["status", "--projection", "ledger", "--group", g, "--topic", missing],
      "--topic or REPLAYABLE_TOPICS",
    ],
    [
      "replay",
      (g) => ["replay", "--projection", "ledger", "--group", g, "--topic", missing, "--to-earliest"],
      "--topic or REPLAYABLE_TOPICS",
    ],
    [
      "rebuild",
      (g) => ["rebuild", "--projection", "ledger", "--group", g, "--topic", missing],
      "--topic or REPLAYABLE_TOPICS",
    ],
    [
      "prune",
      (g) => ["prune", "--projection", "ledger", "--group", g, "--topic", missing],
      "--topic or REPLAYABLE_TOPICS",
    ],
  ];

  it.each(cases)(
    "%s --topic naming a topic that does not exist names it and exits 2",
    async (_c, args, source) => {
      const result = await runCli(args(uniqueName("g")), {
        KAFKA_BROKERS: BROKERS.join(","),
        DATABASE_URL: stack.db.url,
      });
      expectNoErrorLogLine(result.stderr);
      expect(result.stderr).toContain(
        `replayable: topic ${missing} (${source}) does not exist on the cluster; create it first or correct the name`,
      );
      expect(result.code).toBe(2);
    },
  );

  it("status warns about a topic the projection has checkpoints for that no longer exists, and shows the others", async () => {
    const topic = uniqueName("kept");
    const gone = uniqueName("gone");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 5, partitions: 1, seed: 2 });
    await stack.db.pool.query(
      "INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset) VALUES ('ledger', $1, 0, 3), ('ledger', $2, 0, 7)",
      [topic, gone],
    );
    const result = await runCli(["status", "--projection", "ledger", "--group", group], {
      KAFKA_BROKERS: BROKERS.join(","),
      DATABASE_URL: stack.db.url,
    });
    expectNoErrorLogLine(result.stderr);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`${topic}\\s+0\\s+0\\s+5\\s+-\\s+3\\s+5`));
    expect(result.stdout).toContain(
      `WARNING: topic ${gone}: the projection has checkpoints for it, but it no longer exists on the cluster`,
    );
  });

  it("status says a gone topic the projection's members only consumed was consumed, not that the group has committed offsets for it", async () => {
    const gone = uniqueName("gone");
    // A member consumed it (recorded before reading), applied and committed nothing, and it was deleted.
    await stack.db.pool.query(
      "INSERT INTO replayable.projection_topics (projection, topic) VALUES ('github@v1', $1)",
      [gone],
    );
    const result = await runCli(["status", "--projection", "github", "--group", uniqueName("g")], {
      KAFKA_BROKERS: BROKERS.join(","),
      DATABASE_URL: stack.db.url,
    });
    expectNoErrorLogLine(result.stderr);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(
      `WARNING: version 1: topic ${gone}: the projection's members consumed it, but it no longer exists on the cluster`,
    );
  });

  it("a rebuild dry run of a projection with checkpoints of a deleted topic reports history gone instead of failing", async () => {
    const topic = uniqueName("kept");
    const gone = uniqueName("gone");
    await produceLedger(stack.admin, topic, { count: 5, partitions: 1, seed: 2 });
    await stack.db.pool.query(
      "INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset) VALUES ('ledger', $1, 0, 3), ('ledger', $2, 0, 7)",
      [topic, gone],
    );
    const result = await runCli(
      ["rebuild", "--projection", "ledger", "--group", uniqueName("g"), "--output", "json"],
      { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url },
    );
    expectNoErrorLogLine(result.stderr);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      outcome: "dry-run",
      topics: [topic],
      missingTopics: [gone],
      refusal: { reason: "HISTORY_DELETED" },
    });
  });
});
