/**
 * `replayable replay` against real Kafka and PostgreSQL, run as a user runs it: each reset,
 * then `run`: the derived tables stay unchanged, the records re-read are counted as duplicates,
 * and the records past the checkpoint are applied once.
 */
import { describe, expect, it } from "vitest";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { runCli, startCli } from "../../helpers/process.js";
import { cliJson, combinedChecksum, committedOf, runArgs, runUntilRead } from "../../helpers/replay.js";
import { uniqueName, waitFor, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const stack = useStack();

interface PlanJson {
  outcome: string;
  partitions: {
    partition: number;
    newOffset: string;
    requestedOffset?: string;
    checkpoint: string | null;
    duplicates: string;
    firstApplies: string;
    skipped: string;
  }[];
  totals: { duplicates: string; firstApplies: string; skipped: string };
}

function replayArgs(group: string, ...rest: string[]): string[] {
  return ["replay", "--group", group, "--projection", "ledger", "--database-url", stack.db.url, ...rest];
}

/** Produces `count` records, applies them with one `run`, then produces `late` more records past the checkpoint. */
async function appliedThenLate(
  topic: string,
  group: string,
  partitions: number,
  count: number,
  late: number,
) {
  const first = await produceLedger(stack.admin, topic, { count, partitions, seed: 21 });
  expect(await runUntilRead(stack.admin, stack.db.url, topic, group, count)).toMatchObject({
    applied: count,
  });
  const second = await produceLedger(stack.admin, topic, {
    count: late,
    partitions,
    seed: 22,
    idPrefix: "late-",
  });
  return { first, second, checksum: combinedChecksum(first, second) };
}

describe("replay", () => {
  it("--to-earliest: a dry run changes nothing; after --execute, run re-reads every record as a duplicate and applies only the new ones", async () => {
    const topic = uniqueName("replay-earliest");
    const group = uniqueName("g");
    const { checksum } = await appliedThenLate(topic, group, 2, 40, 10);
    const before = await committedOf(stack.admin, group, topic);
    const ledgerBefore = await ledgerChecksumOf(stack.db.pool);

    const dry = await runCli(replayArgs(group, "--topic", topic, "--to-earliest"));
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`Dry run (nothing changed): --to-earliest for group ${group} (Empty)`);
    expect(dry.stdout).toMatch(
      /topic\s+partition\s+logStartOffset\s+highWatermark\s+committedOffset\s+checkpoint\s+newOffset\s+duplicates\s+firstApplies\s+skipped/,
    );
    expect(dry.stdout).toContain(
      "re-reads 40 records as duplicates (effects skipped), applies 10 for the first time, and skips 0 for good",
    );
    expect(dry.stdout).toContain("Add --execute to commit the new offsets.");
    expect(await committedOf(stack.admin, group, topic)).toEqual(before);

    const executed = await cliJson<PlanJson>(
      replayArgs(group, "--topic", topic, "--to-earliest", "--execute"),
    );
    expect(executed.outcome).toBe("executed");
    expect(executed.totals).toEqual({ duplicates: "40", firstApplies: "10", skipped: "0" });
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "0", 1: "0" });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(ledgerBefore);

    const counts = await runUntilRead(stack.admin, stack.db.url, topic, group, 50);
    expect(counts).toEqual({ applied: 10, offsetDuplicates: 40, eventIdDuplicates: 0 });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(checksum);
    expect(await eventIdCount(stack.db.pool)).toBe(50);
  });

  it("--to-offset: clamps an offset above 2^53 to the high watermark and warns of the skipped records; --to-offset 25 re-reads 15", async () => {
    const topic = uniqueName("replay-offset");
    const group = uniqueName("g");
    const { checksum } = await appliedThenLate(topic, group, 1, 40, 10);

    const huge = await runCli(replayArgs(group, "--topic", `${topic}:0`, "--to-offset", "99999999999999999"));
    expect(huge.code, huge.stderr).toBe(0);
    expect(huge.stdout).toContain(
      `note: ${topic}:0: offset 99999999999999999 is outside [0, 50] (log start offset, high watermark); using 50, as Kafka does`,
    );
    expect(huge.stdout).toContain(
      `WARNING: ${topic}:0: the new offset 50 is past the checkpoint 40: up to 10 records before it will never be applied`,
    );
    expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "40" });

    const executed = await cliJson<PlanJson>(
      replayArgs(group, "--topic", topic, "--to-offset", "25", "--execute"),
    );
    expect(executed.partitions).toEqual([
      expect.objectContaining({
        partition: 0,
        newOffset: "25",
        checkpoint: "40",
        duplicates: "15",
        firstApplies: "10",
      }),
    ]);
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 25)).toEqual({
      applied: 10,
      offsetDuplicates: 15,
      eventIdDuplicates: 0,
    });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(checksum);
  });

  it("--shift-by: moves the committed offset back, clamped at the log start offset", async () => {
    const topic = uniqueName("replay-shift");
    const group = uniqueName("g");
    const { checksum } = await appliedThenLate(topic, group, 1, 40, 10);

    const far = await cliJson<PlanJson>(replayArgs(group, "--topic", topic, "--shift-by", "-1000"));
    expect(far.partitions[0]).toMatchObject({ newOffset: "0", requestedOffset: "-960", duplicates: "40" });

    const executed = await cliJson<PlanJson>(
      replayArgs(group, "--all-topics", "--shift-by", "-15", "--execute"),
    );
    expect(executed.partitions).toEqual([
      expect.objectContaining({ newOffset: "25", duplicates: "15", firstApplies: "10" }),
    ]);
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 25)).toEqual({
      applied: 10,
      offsetDuplicates: 15,
      eventIdDuplicates: 0,
    });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(checksum);
  });

  it("--to-datetime: resets to the first record at or after the time; --by-duration counts back from now", async () => {
    const topic = uniqueName("replay-datetime");
    const group = uniqueName("g");
    const early = await produceLedger(stack.admin, topic, { count: 20, partitions: 1, seed: 31 });
    const cut = Date.now();
    await waitFor("the clock to pass the cut", () => (Date.now() > cut ? true : undefined), 5_000, 1);
    const later = await produceLedger(stack.admin, topic, {
      count: 20,
      partitions: 1,
      seed: 32,
      idPrefix: "later-",
    });
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 40)).toMatchObject({ applied: 40 });
    const late = await produceLedger(stack.admin, topic, {
      count: 5,
      partitions: 1,
      seed: 33,
      idPrefix: "late-",
    });

    const day = await cliJson<PlanJson>(replayArgs(group, "--topic", topic, "--by-duration", "P1D"));
    expect(day.partitions[0]).toMatchObject({ newOffset: "0", duplicates: "40", firstApplies: "5" });

    const at = new Date(cut + 1).toISOString();
    const executed = await cliJson<PlanJson>(
      replayArgs(group, "--topic", topic, "--to-datetime", at, "--execute"),
    );
    expect(executed.partitions[0]).toMatchObject({ newOffset: "20", duplicates: "20", firstApplies: "5" });
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 25)).toEqual({
      applied: 5,
      offsetDuplicates: 20,
      eventIdDuplicates: 0,
    });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(combinedChecksum(early, later, late));
  });

  it("reports bad flags with exit code 2, naming the flag", async () => {
    const group = uniqueName("g");
    const cases: [string[], string][] = [
      [["--topic", "t", "--to-datetime", "2026-02-30T00:00:00"], "--to-datetime"],
      [["--topic", "t", "--by-duration", "1 hour"], "--by-duration"],
      [["--topic", "t"], "no reset option given"],
      [
        ["--topic", "t", "--all-topics", "--to-earliest"],
        "give either --topic T[:p,q] (repeatable) or --all-topics",
      ],
      [["--topic", "t", "--to-offset", "-3"], "--to-offset: -3 is negative"],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(replayArgs(group, ...args));
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(message);
    }
  });

  it("refuses --execute of replay and rebuild while a member runs, naming it; nothing changes", async () => {
    const topic = uniqueName("replay-active");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, { count: 20, partitions: 1, seed: 41 });
    const member = startCli(runArgs(stack.db.url, topic, group));
    try {
      await waitForCaughtUp(stack.admin, group, topic);
      const checkpoints = await stack.db.pool.query(
        "SELECT * FROM replayable.checkpoints ORDER BY partition",
      );

      const dry = await runCli(replayArgs(group, "--topic", topic, "--to-earliest"));
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain("The group has 1 active member(s): --execute is refused until they stop.");

      const refused = await runCli(replayArgs(group, "--topic", topic, "--to-earliest", "--execute"));
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `replay refused, nothing changed: consumer group ${group} is Stable with 1 active member`,
      );
      expect(refused.stderr).toMatch(/memberId=\S+ clientId=replayable host=\S+/);
      expect(refused.stderr).toContain("Stop every member first");

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
      expect(rebuild.code).toBe(1);
      expect(rebuild.stderr).toContain(
        `rebuild refused, nothing changed: consumer group ${group} is Stable with 1 active member`,
      );
      expect(rebuild.stderr).toMatch(/memberId=\S+ clientId=replayable host=\S+/);

      expect(await committedOf(stack.admin, group, topic)).toEqual({ 0: "20" });
      expect(
        (await stack.db.pool.query("SELECT * FROM replayable.checkpoints ORDER BY partition")).rows,
      ).toEqual(checkpoints.rows);
      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
      expect(await eventIdCount(stack.db.pool)).toBe(20);
      expect(
        (await stack.db.pool.query("SELECT count(*)::int AS n FROM replayable.rebuilds")).rows[0],
      ).toEqual({
        n: 0,
      });
    } finally {
      member.child.kill("SIGTERM");
      expect((await member.exited).code).toBe(0);
    }
  });
});
