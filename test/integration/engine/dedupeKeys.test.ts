/**
 * The documented difference between the two dedupe keys, in-process against real Kafka and
 * PostgreSQL: the same ce_id re-sent at a new offset is applied once with `event-id` dedupe
 * and twice with `offset` dedupe. Also: a full replay (group reset to earliest) leaves the
 * derived tables identical and counts every re-read record as a duplicate.
 */
import { describe, expect, it } from "vitest";
import { produceRecords } from "../../../src/kafka/producer.js";
import type { Projection } from "../../../src/projection.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { tableChecksums } from "../../../src/sql/tableChecksums.js";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { metricOf as metric, runUntilCaughtUp as runWith } from "../../helpers/inProcess.js";
import { testKafka, uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

function runUntilCaughtUp(projection: Projection<unknown>, topic: string, group: string) {
  return runWith(stack.admin, { projection, databaseUrl: stack.db.url, topic, group });
}

const credit = (id: string, amount: number) => ({
  key: "acc-1",
  value: JSON.stringify({ account: "acc-1", amount }),
  headers: { ce_specversion: "1.0", ce_id: id, ce_source: "/test", ce_type: "ledger.account.credited" },
});

async function balance(): Promise<string | undefined> {
  const r = await stack.db.pool.query<{ balance_cents: string }>(
    "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = 'acc-1'",
  );
  return r.rows[0]?.balance_cents;
}

describe("dedupe keys", () => {
  it("applies the same ce_id at two offsets once with event-id dedupe", async () => {
    const topic = uniqueName("same-id");
    await stack.admin.createTopic(topic, 1);
    await produceRecords(testKafka(), topic, [credit("evt-1", 100), credit("evt-1", 100)]);
    const metrics = await runUntilCaughtUp(ledgerProjection, topic, uniqueName("g"));
    expect(await balance()).toBe("100");
    expect(await metric(metrics, "replayable_duplicates_total", { topic, key: "event_id" })).toBe(1);
    expect(await metric(metrics, "replayable_records_applied_total", { topic })).toBe(1);
  });

  it("applies the same ce_id at two offsets twice with offset dedupe (the documented difference)", async () => {
    const topic = uniqueName("same-id-offset");
    await stack.admin.createTopic(topic, 1);
    await produceRecords(testKafka(), topic, [credit("evt-1", 100), credit("evt-1", 100)]);
    const byOffset: Projection<unknown> = {
      ...ledgerProjection,
      dedupe: { kind: "offset" },
    };
    const metrics = await runUntilCaughtUp(byOffset, topic, uniqueName("g"));
    expect(await balance()).toBe("200");
    expect(await metric(metrics, "replayable_duplicates_total", { topic })).toBe(0);
    expect(await metric(metrics, "replayable_records_applied_total", { topic })).toBe(2);
    expect(await eventIdCount(stack.db.pool)).toBe(0);
  });
});

describe("full replay", () => {
  it("reset to earliest and run again: derived tables identical, duplicates = records re-read", async () => {
    const topic = uniqueName("replay");
    const group = uniqueName("g");
    // Produced before the group exists: a new group starts from the earliest offset.
    const stream = await produceLedger(stack.admin, topic, {
      count: 300,
      partitions: 3,
      duplicateRate: 0.1,
      seed: 21,
    });
    const first = await runUntilCaughtUp(ledgerProjection, topic, group);
    expect(await metric(first, "replayable_records_applied_total")).toBe(stream.events);
    expect(await metric(first, "replayable_duplicates_total", { key: "event_id" })).toBe(stream.duplicates);
    expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
    const before = await tableChecksums(stack.db.pool, ledgerProjection.tables);

    for (const p of await stack.admin.topicOffsets(topic)) {
      await stack.admin.setOffsets(group, topic, [{ partition: p.partition, offset: p.logStartOffset }]);
    }
    const second = await runUntilCaughtUp(ledgerProjection, topic, group);
    expect(await tableChecksums(stack.db.pool, ledgerProjection.tables)).toEqual(before);
    expect(await metric(second, "replayable_duplicates_total", { key: "offset" })).toBe(300);
    expect(await metric(second, "replayable_records_applied_total")).toBe(0);
  });
});
