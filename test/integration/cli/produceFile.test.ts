/**
 * `replayable produce --topic T --file records.jsonl` (issue 28): a newcomer's test records on
 * their own topic, key, value and headers per line; a topic that does not exist is refused unless
 * `--create-topic N` creates it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { readTopic } from "../../../src/kafka/readTopic.js";
import { runCli } from "../../helpers/process.js";
import { BROKERS, testAdmin, testKafka, uniqueName } from "../../helpers/stack.js";

let admin: ClusterAdmin;

beforeAll(async () => {
  admin = await testAdmin();
});

afterAll(async () => {
  await admin?.close();
});

describe("produce --topic T --file F", () => {
  it("refuses a topic that does not exist, creates it with --create-topic, and sends each line's key, value and headers in order", async () => {
    const dir = mkdtempSync(join(tmpdir(), "replayable-produce-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "records.jsonl");
    writeFileSync(
      file,
      [
        '{"key":"o-1","value":{"id":"o-1","amountCents":1250},"headers":{"ce_id":"e-1"}}',
        '{"key":"o-1","value":"plain"}',
        '{"key":"o-2","value":null}',
        "",
      ].join("\n"),
    );
    const topic = uniqueName("produced");
    const env = { KAFKA_BROKERS: BROKERS.join(",") };

    const refused = await runCli(["produce", "--topic", topic, "--file", file], env);
    expect(refused.stderr).toContain(
      `topic ${topic} (--topic) does not exist on the cluster; create it with your cluster's tools, or give --create-topic <partitions> to create it here with replication factor 1, or correct the name`,
    );
    expect(refused.code).toBe(2);
    expect(await admin.listTopics()).not.toContain(topic);

    const produced = await runCli(["produce", "--topic", topic, "--file", file, "--create-topic", "1"], env);
    expect(produced.stderr).toBe("");
    expect(produced.code).toBe(0);
    expect(produced.stdout).toBe(
      `created topic ${topic} (1 partition, replication factor 1)\nproduced 3 records from ${file} to ${topic}\n`,
    );
    const records = await readTopic(testKafka(), topic);
    expect(
      records.map((r) => [
        r.key?.toString(),
        r.value?.toString() ?? null,
        Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, v.map((b) => b?.toString())])),
      ]),
    ).toEqual([
      ["o-1", '{"id":"o-1","amountCents":1250}', { ce_id: ["e-1"] }],
      ["o-1", "plain", {}],
      ["o-2", null, {}],
    ]);
  }, 120_000);
});
