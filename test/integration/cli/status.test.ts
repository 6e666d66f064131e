/**
 * `status` reads the checkpoints of --projection, by default the projection named like the group,
 * as `replay` does (regression: `status --group github` showed the ledger projection's checkpoints).
 * A committed offset that is no offset (negative) or lies past the log reads the same in `status`
 * and the replay dry run.
 */
import { describe, expect, it } from "vitest";
import { produceLedger } from "../../helpers/ledger.js";
import { runCli, startCli } from "../../helpers/process.js";
import { cliJson } from "../../helpers/replay.js";
import { BROKERS, uniqueName, useStack } from "../../helpers/stack.js";

interface StatusJson {
  partitions: { partition: number; committedOffset: string | null; checkpoint: string | null; lag: string }[];
  warnings: string[];
}

interface ReplayJson {
  partitions: {
    partition: number;
    committedOffset: string | null;
    newOffset: string;
    committedAheadOfLog: boolean;
  }[];
}

const stack = useStack();

describe("status", () => {
  it("regression: exits quietly when the reader of its output is gone (status | head; break-it review)", async () => {
    const topic = uniqueName("status-pipe");
    await produceLedger(stack.admin, topic, { count: 10, partitions: 30 });
    const cli = startCli(["status", "--projection", "ledger", "--group", uniqueName("g"), "--topic", topic], {
      KAFKA_BROKERS: BROKERS.join(","),
      DATABASE_URL: stack.db.url,
    });
    // The pipe's reader closes before anything is written: every write meets EPIPE.
    cli.child.stdout?.destroy();
    // 141 (128 + SIGPIPE), as a shell tool the pipe ended: the output stopped part-way, and a
    // command that stops there (an --execute one too) must not report success (review finding).
    expect(await cli.exited, cli.stderr()).toEqual({ code: 141, signal: null });
    expect(cli.stderr()).not.toContain("EPIPE");
  });

  it("defaults --projection to the group when the group names a projection, and says which it shows", async () => {
    const topic = uniqueName("status");
    await stack.admin.createTopic(topic, 1);
    const env = { KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url };

    const json = await runCli(["status", "--group", "github", "--topic", topic, "--output", "json"], env);
    expect(json.code, json.stderr).toBe(0);
    // github is versioned: status shows its versions, each with its own group.
    expect(JSON.parse(json.stdout)).toMatchObject({ projection: "github", versions: [{ version: 1 }] });

    const table = await runCli(["status", "--group", "github", "--topic", topic], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain("projection github (versioned)");

    const unknown = await runCli(["status", "--group", uniqueName("g"), "--topic", topic], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("is not the name of a projection");
  });
});

describe("committed offsets that are not positions in the log", () => {
  const env = () => ({ KAFKA_BROKERS: BROKERS.join(","), DATABASE_URL: stack.db.url });
  const statusArgs = (group: string, topic: string) => [
    "status",
    "--projection",
    "ledger",
    "--group",
    group,
    "--topic",
    topic,
  ];
  const replayArgs = (group: string, topic: string, ...reset: string[]) => [
    "replay",
    "--projection",
    "ledger",
    "--group",
    group,
    "--topic",
    topic,
    ...reset,
    "--database-url",
    stack.db.url,
  ];

  it("a committed offset of -2 reads as none in status, replay planning and --all-topics", async () => {
    const topic = uniqueName("minus-two");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 12, partitions: 2, seed: 3 });
    const ends = await stack.admin.topicOffsets(topic);
    // KafkaJS's admin.setOffsets commits a seek to -2 (its EARLIEST sentinel) as the offset -2.
    await stack.admin.setOffsets(group, topic, [{ partition: 0, offset: "-2" }]);
    expect((await stack.admin.committedOffsets(group, [topic])).map((c) => c.offset)).toEqual(["-1", "-1"]);
    expect(await stack.admin.groupCommittedOffsets(group)).toEqual([]);

    const status = await runCli([...statusArgs(group, topic), "--output", "json"], env());
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as StatusJson).partitions).toEqual(
      ends.map((e): unknown =>
        expect.objectContaining({
          partition: e.partition,
          committedOffset: null,
          checkpoint: null,
          lag: e.highWatermark,
        }),
      ),
    );

    const current = await cliJson<ReplayJson>(replayArgs(group, topic, "--to-current"));
    expect(current.partitions.map((p) => [p.committedOffset, p.newOffset])).toEqual(
      ends.map((e) => [null, e.highWatermark]),
    );
    const shift = await runCli(replayArgs(group, topic, "--shift-by", "-1"));
    expect(shift.code).toBe(2);
    expect(shift.stderr).toContain(`cannot shift partition ${topic}:0, the group has no committed offset`);
  });

  it("a committed offset above the high watermark is a warning in status and the replay dry run, not a negative lag", async () => {
    const topic = uniqueName("ahead");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 5, partitions: 1, seed: 4 });
    const [end] = await stack.admin.topicOffsets(topic);
    expect(end!.highWatermark).toBe("5");
    await stack.admin.setOffsets(group, topic, [{ partition: 0, offset: "100" }]);

    const status = await runCli([...statusArgs(group, topic), "--output", "json"], env());
    expect(status.code, status.stderr).toBe(0);
    const json = JSON.parse(status.stdout) as StatusJson;
    expect(json.partitions).toEqual([expect.objectContaining({ committedOffset: "100", lag: "5" })]);
    expect(json.warnings).toEqual([
      expect.stringContaining(`${topic}:0: the committed offset 100 is above the high watermark 5`),
    ]);
    const table = await runCli(statusArgs(group, topic), env());
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(
      `WARNING: ${topic}:0: the committed offset 100 is above the high watermark 5`,
    );

    const dry = await runCli(replayArgs(group, topic, "--to-current"));
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      `WARNING: ${topic}:0: the committed offset 100 is above the high watermark 5`,
    );
    const plan = await cliJson<ReplayJson>(replayArgs(group, topic, "--to-earliest"));
    expect(plan.partitions).toEqual([
      expect.objectContaining({ committedOffset: "100", newOffset: "0", committedAheadOfLog: true }),
    ]);
  });

  it("regression: a committed offset below the log start offset is a warning in status (records deleted before the group read them), and the lag counts from the log start (break-it review)", async () => {
    const topic = uniqueName("deleted");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 10, partitions: 1, seed: 6 });
    await stack.admin.setOffsets(group, topic, [{ partition: 0, offset: "2" }]);
    await stack.admin.deleteRecords(topic, [{ partition: 0, offset: "6" }]);
    const [end] = await stack.admin.topicOffsets(topic);
    expect([end!.logStartOffset, end!.highWatermark]).toEqual(["6", "10"]);

    const status = await runCli([...statusArgs(group, topic), "--output", "json"], env());
    expect(status.code, status.stderr).toBe(0);
    const json = JSON.parse(status.stdout) as StatusJson;
    expect(json.partitions).toEqual([expect.objectContaining({ committedOffset: "2", lag: "4" })]);
    const warning = `${topic}:0: the committed offset 2 is below the log start offset 6: records 2 to 5 were deleted (retention or DeleteRecords) before group ${group} read them`;
    expect(json.warnings).toEqual([expect.stringContaining(warning)]);
    const table = await runCli(statusArgs(group, topic), env());
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`WARNING: ${warning}`);
  });

  it("regression: a checkpoint below the log start offset is a warning in status even when the group has no committed offset (expired offsets; break-it review)", async () => {
    const topic = uniqueName("expired");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 10, partitions: 1, seed: 7 });
    await stack.db.pool.query(
      "INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset) VALUES ('ledger', $1, 0, 2)",
      [topic],
    );
    await stack.admin.deleteRecords(topic, [{ partition: 0, offset: "6" }]);

    const status = await runCli([...statusArgs(group, topic), "--output", "json"], env());
    expect(status.code, status.stderr).toBe(0);
    const json = JSON.parse(status.stdout) as StatusJson;
    expect(json.partitions).toEqual([
      expect.objectContaining({ committedOffset: null, checkpoint: "2", lag: "4" }),
    ]);
    expect(json.warnings).toEqual([
      expect.stringContaining(
        `${topic}:0: the checkpoint 2 is below the log start offset 6: records 2 to 5 were deleted (retention or DeleteRecords) before the projection applied them, and it never applies them (group ${group} has no committed offset;`,
      ),
    ]);
  });
});
