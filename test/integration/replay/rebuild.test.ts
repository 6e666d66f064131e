/**
 * `replayable rebuild` against real Kafka and PostgreSQL: the projection recomputed from the log
 * equals what it was, an audit row is written, lost history is refused without --force, and a
 * `run` started during a rebuild fails clearly.
 */
import { hostname, userInfo } from "node:os";
import { describe, expect, it, onTestFinished } from "vitest";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { runCli, startCli } from "../../helpers/process.js";
import { committedOf, runArgs, runUntilRead } from "../../helpers/replay.js";
import { uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

function rebuildArgs(topic: string, group: string, ...rest: string[]): string[] {
  return [
    "rebuild",
    "--projection",
    "ledger",
    "--group",
    group,
    "--topic",
    topic,
    "--database-url",
    stack.db.url,
    ...rest,
  ];
}

async function count(sql: string): Promise<number> {
  return (await stack.db.pool.query<{ n: number }>(`SELECT (${sql})::int AS n`)).rows[0]!.n;
}

async function rebuildRows() {
  return (
    await stack.db.pool.query<{
      projection: string;
      group_id: string;
      os_user: string;
      host: string;
      forced: number;
      offsets: { partitions: { topic: string; partition: number; from: string | null; to: string }[] };
    }>("SELECT projection, group_id, os_user, host, forced, offsets FROM replayable.rebuilds ORDER BY id")
  ).rows;
}

describe("rebuild", () => {
  it("recomputes the projection from the log: the derived tables equal the checksum taken before, with an audit row", async () => {
    const topic = uniqueName("rebuild");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 40,
      partitions: 2,
      seed: 51,
      duplicateRate: 0.1,
    });
    await runUntilRead(stack.admin, stack.db.url, topic, group, 40);
    const before = await ledgerChecksumOf(stack.db.pool);
    expect(before).toBe(stream.checksum);

    const dry = await runCli(rebuildArgs(topic, group));
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      `Dry run (nothing changed): rebuild of projection ledger with group ${group} (Empty)`,
    );
    expect(dry.stdout).toMatch(
      /--execute would empty ledger\.ledger_accounts \(\d+ rows\), ledger\.ledger_orders \(\d+ rows\) and the dedupe state \(2 checkpoints, \d+ event ids\)/,
    );
    expect(await count("SELECT count(*) FROM replayable.checkpoints")).toBe(2);
    expect(await rebuildRows()).toEqual([]);

    const executed = await runCli(rebuildArgs(topic, group, "--execute"));
    expect(executed.code, executed.stderr).toBe(0);
    expect(executed.stdout).toContain(
      `Rebuilt projection ledger (audit row 1 in replayable.rebuilds): group ${group} reset to the log start offsets`,
    );
    expect(await count("SELECT count(*) FROM ledger.ledger_accounts")).toBe(0);
    expect(await count("SELECT count(*) FROM ledger.ledger_orders")).toBe(0);
    expect(await count("SELECT count(*) FROM replayable.checkpoints")).toBe(0);
    expect(await eventIdCount(stack.db.pool)).toBe(0);
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "0", 1: "0" });
    const [audit] = await rebuildRows();
    expect(audit).toMatchObject({
      projection: "ledger",
      group_id: group,
      os_user: userInfo().username,
      host: hostname(),
      forced: 0,
    });
    expect(audit!.offsets.partitions.map((p) => [p.topic, p.partition, p.to])).toEqual([
      [topic, 0, "0"],
      [topic, 1, "0"],
    ]);
    expect(audit!.offsets.partitions.every((p) => p.from !== null && BigInt(p.from) > 0n)).toBe(true);

    const counts = await runUntilRead(stack.admin, stack.db.url, topic, group, 40);
    expect(counts).toEqual({
      applied: stream.events,
      offsetDuplicates: 0,
      eventIdDuplicates: stream.duplicates,
    });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(before);
  });

  it("refuses when records were deleted below a new log start offset, unless --force", async () => {
    const topic = uniqueName("rebuild-deleted");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, { count: 30, partitions: 1, seed: 52 });
    await runUntilRead(stack.admin, stack.db.url, topic, group, 30);
    await stack.admin.deleteRecords(topic, [{ partition: 0, offset: "10" }]);

    const dry = await runCli(rebuildArgs(topic, group));
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("--execute would be refused now (HISTORY_DELETED)");

    const refused = await runCli(rebuildArgs(topic, group, "--execute"));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "rebuild refused, nothing changed: cannot rebuild ledger: history is gone",
    );
    expect(refused.stderr).toContain(`${topic}:0 log start offset 10: records 0 to 9 were deleted`);
    expect(refused.stderr).toContain("--force");
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await eventIdCount(stack.db.pool)).toBe(30);
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "30" });
    expect(await rebuildRows()).toEqual([]);

    const forced = await runCli(rebuildArgs(topic, group, "--execute", "--force"));
    expect(forced.code, forced.stderr).toBe(0);
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "10" });
    expect(await rebuildRows()).toEqual([expect.objectContaining({ forced: 1 })]);
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 20)).toEqual({
      applied: 20,
      offsetDuplicates: 0,
      eventIdDuplicates: 0,
    });
  });

  it.each(["compact", "compact,delete"])(
    "Rebuild of a compacted topic (cleanup.policy=%s) is refused like deleted history, unless --force",
    async (policy) => {
      const topic = uniqueName("rebuild-compacted");
      const other = uniqueName("rebuild-plain");
      const group = uniqueName("g");
      // A compacted topic keeps only the latest record per key: the ledger's credits would be lost.
      await stack.admin.createTopic(topic, 1, { "cleanup.policy": policy });
      const stream = await produceLedger(stack.admin, topic, { count: 12, partitions: 1, seed: 54 });
      await produceLedger(stack.admin, other, { count: 3, partitions: 1, seed: 55, idPrefix: "plain-" });
      await runUntilRead(stack.admin, stack.db.url, topic, group, 12);
      const args = (...rest: string[]) => [...rebuildArgs(topic, group, ...rest), "--topic", other];

      const dry = await runCli(args());
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain("--execute would be refused now (HISTORY_COMPACTED)");

      const refused = await runCli(args("--execute"));
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        "rebuild refused, nothing changed: cannot rebuild ledger: history is gone",
      );
      expect(refused.stderr).toContain(
        `topic ${topic} has cleanup.policy=${policy}: compaction keeps only the latest record per key`,
      );
      expect(refused.stderr).not.toContain(`topic ${other} has cleanup.policy`);
      expect(refused.stderr).toContain("--force");
      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
      expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "12" });
      expect(await rebuildRows()).toEqual([]);

      const forced = await runCli(args("--execute", "--force"));
      expect(forced.code, forced.stderr).toBe(0);
      expect(await rebuildRows()).toEqual([expect.objectContaining({ forced: 1 })]);
      expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "0" });
    },
  );

  it("regression: refuses a group that has no committed offsets where the projection has checkpoints (a mistyped --group), unless --force (break-it review)", async () => {
    const topic = uniqueName("rebuild-other-group");
    const group = uniqueName("g");
    const other = uniqueName("g-typo");
    const stream = await produceLedger(stack.admin, topic, { count: 20, partitions: 1, seed: 53 });
    await runUntilRead(stack.admin, stack.db.url, topic, group, 20);
    const tablesBefore = await ledgerChecksumOf(stack.db.pool);
    const auditsBefore = (await rebuildRows()).length;

    const dry = await runCli(rebuildArgs(topic, other));
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("--execute would be refused now (GROUP_HAS_NO_OFFSETS)");

    const refused = await runCli(rebuildArgs(topic, other, "--execute"));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `rebuild refused, nothing changed: cannot rebuild ledger with group ${other}: the group has no committed offset`,
    );
    expect(refused.stderr).toContain(`${topic}:0 (checkpoint 20)`);
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(tablesBefore);
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "20" });
    expect((await rebuildRows()).length).toBe(auditsBefore);
    expect(stream.checksum).toBeDefined();

    // The group that applied the projection is not refused.
    const right = await runCli(rebuildArgs(topic, group));
    expect(right.code, right.stderr).toBe(0);
    expect(right.stdout).not.toContain("GROUP_HAS_NO_OFFSETS");
  });

  it("holds the projection's lock: a run or a second rebuild started meanwhile fails clearly", async () => {
    const topic = uniqueName("rebuild-locked");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, { count: 10, partitions: 1, seed: 53 });
    await runUntilRead(stack.admin, stack.db.url, topic, group, 10);

    const rebuilding = startCli(rebuildArgs(topic, group, "--execute"), {
      LOG_LEVEL: "warn",
      REPLAYABLE_FAILPOINTS: "rebuild-locked=sleep:60000@1",
    });
    try {
      await rebuilding.waitForStderr("failpoint rebuild-locked: sleep");
      const run = startCli(runArgs(stack.db.url, topic, group));
      onTestFinished(() => run.kill());
      const exit = await run.exited;
      expect(exit.code).toBe(1);
      expect(run.stderr()).toContain(
        "replayable: projection ledger is being rebuilt (another session holds its advisory lock)",
      );

      const second = await runCli(rebuildArgs(topic, group, "--execute"));
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(
        "rebuild refused, nothing changed: cannot rebuild: projection ledger is in use",
      );
    } finally {
      rebuilding.kill();
      await rebuilding.exited;
    }
    // Killed while holding the lock, before any change: the lock went with its session.
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "10" });
    const again = await runCli(rebuildArgs(topic, group, "--execute"));
    expect(again.code, again.stderr).toBe(0);
    await runUntilRead(stack.admin, stack.db.url, topic, group, 10);
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
  });
});
