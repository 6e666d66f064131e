/**
 * `replayable prune` against real Kafka and PostgreSQL: after records were deleted below a new log
 * start offset, exactly the event-id rows first seen below it go; a replay afterwards applies
 * nothing twice.
 */
import { describe, expect, it } from "vitest";
import { ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { runCli } from "../../helpers/process.js";
import { cliJson, runUntilRead } from "../../helpers/replay.js";
import { uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

interface PruneJson {
  outcome: string;
  partitions: {
    topic: string;
    partition: number;
    logStartOffset: string;
    eventIds: string;
    prunable: string;
    deleted: string;
  }[];
  totals: { eventIds: string; prunable: string; deleted: string };
}

async function eventRows(): Promise<{ event_id: string; partition: number; offset: string }[]> {
  return (
    await stack.db.pool.query<{ event_id: string; partition: number; offset: string }>(
      `SELECT event_id, partition, "offset" FROM replayable.processed_events WHERE projection = 'ledger' ORDER BY event_id`,
    )
  ).rows;
}

describe("prune", () => {
  it("deletes only the event ids first seen below the log start offset; a replay afterwards applies nothing twice", async () => {
    const topic = uniqueName("prune");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, {
      count: 60,
      partitions: 2,
      seed: 61,
      duplicateRate: 0.15,
    });
    await runUntilRead(stack.admin, stack.db.url, topic, group, 60);
    const before = await eventRows();
    expect(before).toHaveLength(stream.events);
    await stack.admin.deleteRecords(topic, [
      { partition: 0, offset: "8" },
      { partition: 1, offset: "5" },
    ]);
    const logStart: Record<number, bigint> = { 0: 8n, 1: 5n };
    const kept = before.filter((r) => BigInt(r.offset) >= logStart[r.partition]!);
    const gone = before.length - kept.length;
    expect(gone).toBeGreaterThan(0);

    const args = ["prune", "--projection", "ledger", "--database-url", stack.db.url];
    const dry = await runCli(args);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      "Dry run (nothing changed): event ids of projection ledger below the log start offset:",
    );
    expect(dry.stdout).toContain(
      `${gone} of ${before.length} event ids can be deleted; add --execute to delete them.`,
    );
    expect(await eventRows()).toEqual(before);

    const json = await cliJson<PruneJson>(args);
    expect(json.partitions.map((p) => [p.partition, p.logStartOffset, p.prunable])).toEqual([
      [0, "8", String(before.filter((r) => r.partition === 0 && BigInt(r.offset) < 8n).length)],
      [1, "5", String(before.filter((r) => r.partition === 1 && BigInt(r.offset) < 5n).length)],
    ]);

    const executed = await cliJson<PruneJson>([...args, "--execute"]);
    expect(executed.totals).toEqual({
      eventIds: String(before.length),
      prunable: String(gone),
      deleted: String(gone),
    });
    expect(await eventRows()).toEqual(kept);

    const again = await cliJson<PruneJson>([...args, "--execute"]);
    expect(again.totals.deleted).toBe("0");

    // The records below the log start are gone; what is left is re-read as duplicates only.
    const replay = await runCli([
      "replay",
      "--group",
      group,
      "--projection",
      "ledger",
      "--topic",
      topic,
      "--to-earliest",
      "--execute",
      "--database-url",
      stack.db.url,
    ]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(await runUntilRead(stack.admin, stack.db.url, topic, group, 60 - 13)).toEqual({
      applied: 0,
      offsetDuplicates: 47,
      eventIdDuplicates: 0,
    });
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    expect(await eventRows()).toEqual(kept);
  });
});
