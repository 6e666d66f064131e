/**
 * `replayable run` with a bad setting fails at start, exit code 2, with a message naming the
 * variable (or flag) and what is valid, before it reads any record or joins the group.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { freePort } from "../../helpers/privatePostgres.js";
import { produceLedger } from "../../helpers/ledger.js";
import { runCli } from "../../helpers/process.js";
import { createTestDatabase, testAdmin, uniqueName, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
let admin: ClusterAdmin;
let topic: string;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = await testAdmin();
  topic = uniqueName("cfg");
  await produceLedger(admin, topic, { count: 5, partitions: 1, seed: 5 });
});

afterAll(async () => {
  await admin?.close();
  await db?.drop();
});

describe("run refuses bad settings at start", () => {
  const cases: [string, string[], Record<string, string>, number, string][] = [
    [
      "a number out of range",
      [],
      { REPLAYABLE_MAX_BATCH_RECORDS: "0" },
      2,
      "REPLAYABLE_MAX_BATCH_RECORDS=0: must be at least 1 record",
    ],
    [
      "a misspelt variable",
      [],
      { REPLAYABLE_SESION_TIMEOUT_MS: "10000" },
      2,
      "REPLAYABLE_SESION_TIMEOUT_MS=10000: is not a setting; did you mean REPLAYABLE_SESSION_TIMEOUT_MS?",
    ],
    [
      "a bad flag value",
      ["--metrics-port", "70000"],
      {},
      2,
      "REPLAYABLE_METRICS_PORT=70000 (from a command-line flag): must be at most 65535",
    ],
    [
      "an unknown projection from the environment",
      ["--projection-from-env"],
      { REPLAYABLE_PROJECTION: "nope" },
      2,
      "REPLAYABLE_PROJECTION=nope: unknown projection; use one of ledger",
    ],
    [
      "regression: an unknown projection from a flag says it came from the flag (break-it review)",
      ["--projection", "nope"],
      {},
      2,
      "REPLAYABLE_PROJECTION=nope (from a command-line flag): unknown projection; use one of ledger",
    ],
    [
      "a topic that does not exist",
      ["--topic", "no-such-topic-7f3a"],
      {},
      2,
      "topic no-such-topic-7f3a (REPLAYABLE_TOPICS, --topic or the config file's topics) does not exist on the cluster",
    ],
    [
      "a DLQ topic that does not exist",
      [],
      { REPLAYABLE_DLQ_TOPIC: "no-such-dlq-7f3a" },
      2,
      "topic no-such-dlq-7f3a (REPLAYABLE_DLQ_TOPIC) does not exist on the cluster",
    ],
    [
      "a DLQ topic that is the consumed topic",
      [],
      { REPLAYABLE_DLQ_TOPIC: "<topic>" },
      2,
      "REPLAYABLE_DLQ_TOPIC=<topic>: must not be one of the consumed topics",
    ],
  ];

  it.each(cases)("%s", async (_name, extraArgs, env, code, message) => {
    const group = uniqueName("g");
    const fromEnv = extraArgs.includes("--projection-from-env");
    const args = [
      "run",
      ...(fromEnv || extraArgs.includes("--projection") ? [] : ["--projection", "ledger"]),
      ...(extraArgs.includes("--topic") ? [] : ["--topic", topic]),
      "--group",
      group,
      "--database-url",
      db.url,
      ...extraArgs.filter((a) => a !== "--projection-from-env"),
    ];
    const resolved = Object.fromEntries(
      Object.entries(env).map(([k, v]) => [k, v.replace("<topic>", topic)]),
    );
    const result = await runCli(args, resolved);
    expect(result.stderr).toContain(message.replace("<topic>", topic));
    expect(result.code).toBe(code);
    // Nothing was read: no committed offset, no checkpoint.
    expect(await admin.committedOffsets(group, [topic])).toEqual([{ topic, partition: 0, offset: "-1" }]);
    const checkpoints = await db.pool.query("SELECT 1 FROM replayable.checkpoints");
    expect(checkpoints.rowCount).toBe(0);
  });

  it("KAFKA_CLIENT=platformatic on a Node.js too old for it: exit 2 before anything starts", async () => {
    const group = uniqueName("g");
    const preload = fileURLToPath(new URL("../../fixtures/nodeVersion20.mjs", import.meta.url));
    const result = await runCli(
      ["run", "--projection", "ledger", "--topic", topic, "--group", group, "--database-url", db.url],
      { KAFKA_CLIENT: "platformatic", NODE_OPTIONS: `--import ${preload}`, LOG_LEVEL: "info" },
    );
    expect(result.stderr).toContain(
      "KAFKA_CLIENT=platformatic: @platformatic/kafka needs Node.js >= 22.22.0 on Node.js 22, >= 24.6.0 on Node.js 24, or a later major; this is Node.js v20.20.2",
    );
    expect(result.code).toBe(2);
    // Refused before the member logged its start, served /metrics or read a record.
    expect(result.stderr).not.toContain('"msg":"starting"');
    expect(result.stderr).not.toContain("metrics");
    expect(await admin.committedOffsets(group, [topic])).toEqual([{ topic, partition: 0, offset: "-1" }]);
  });

  it("an unreachable database names DATABASE_URL and exits 1", async () => {
    const port = await freePort();
    const result = await runCli([
      "run",
      "--projection",
      "ledger",
      "--topic",
      topic,
      "--group",
      uniqueName("g"),
      "--database-url",
      `postgres://postgres:secret@127.0.0.1:${port}/db`,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `replayable: cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1:${port}/db (DATABASE_URL, --database-url or the config file's databaseUrl)`,
    );
    expect(result.stderr).not.toContain("secret");
  });
});
