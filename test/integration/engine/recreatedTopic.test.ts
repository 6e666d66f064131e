/**
 * Regression: a topic deleted and recreated under the same name. Its offsets restart at 0, below
 * the projection's checkpoint, so reading on would skip the new records as duplicates. The member
 * must refuse with a clear error (exit 1), whether the new topic is still empty or has records,
 * and nothing may be applied or skipped until an operator rebuilds.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { runCli, startCli } from "../../helpers/process.js";
import { runArgs, runUntilRead } from "../../helpers/replay.js";
import { uniqueName, waitFor, useStack } from "../../helpers/stack.js";

const stack = useStack();

async function checkpoint(topic: string): Promise<string | undefined> {
  const r = await stack.db.pool.query<{ next_offset: string }>(
    "SELECT next_offset FROM replayable.checkpoints WHERE topic = $1 AND partition = 0",
    [topic],
  );
  return r.rows[0]?.next_offset;
}

describe("a topic deleted and recreated under the same name", () => {
  it("makes the consumer refuse with a clear error, empty or not, until the projection is rebuilt", async () => {
    const topic = uniqueName("recreated");
    const group = uniqueName("g");
    const old = await produceLedger(stack.admin, topic, { count: 20, partitions: 1, seed: 71 });
    await runUntilRead(stack.admin, stack.db.url, topic, group, 20);
    expect(await checkpoint(topic)).toBe("20");

    await stack.admin.deleteTopics([topic]);
    await waitFor("the topic to be recreated", async () =>
      (await stack.admin.createTopic(topic, 1)) ? true : undefined,
    );
    await waitFor("the recreated topic to answer", async () =>
      (await stack.admin.topicOffsets(topic))[0]?.highWatermark === "0" ? true : undefined,
    );

    const empty = startCli(runArgs(stack.db.url, topic, group));
    onTestFinished(() => empty.kill());
    const emptyExit = await empty.exited;
    expect(emptyExit.code, empty.stderr()).toBe(1);
    expect(empty.stderr()).toContain(
      `replayable: ${topic}/0: the high watermark 0 is below projection ledger's checkpoint 20: the topic was deleted and recreated, or truncated.`,
    );

    const fresh = await produceLedger(stack.admin, topic, {
      count: 5,
      partitions: 1,
      seed: 72,
      idPrefix: "new-",
    });
    const withRecords = startCli(runArgs(stack.db.url, topic, group));
    onTestFinished(() => withRecords.kill());
    const withRecordsExit = await withRecords.exited;
    expect(withRecordsExit.code, withRecords.stderr()).toBe(1);
    expect(withRecords.stderr()).toContain(`the high watermark 5 is below projection ledger's checkpoint 20`);
    expect(await checkpoint(topic)).toBe("20");
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(old.checksum);

    const rebuild = await runCli([
      "rebuild",
      "--projection",
      "ledger",
      "--group",
      group,
      "--topic",
      topic,
      "--database-url",
      stack.db.url,
      "--execute",
    ]);
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 5)).toMatchObject({ applied: 5 });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(fresh.checksum);
  });
});
