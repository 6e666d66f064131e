/**
 * The checker of the fault tests: the final state of a ledger run compared with the model computed
 * from the records produced (a Jepsen-style checker), never with the member's own counters.
 */
import { expect } from "vitest";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import type { LedgerStream } from "../../src/projections/ledger/generate.js";
import { eventIdCount, ledgerChecksumOf } from "./ledger.js";
import type { TestDatabase } from "./stack.js";

/**
 * Offsets below each partition's high watermark whose record was never applied, as ranges
 * (`partition 2: 100..180`): with a stream of no re-sent events, every offset carries an event id
 * of its own, and `replayable.processed_events` records the offset where each id was applied.
 */
export async function unappliedRanges(
  db: TestDatabase,
  admin: ClusterAdmin,
  topic: string,
): Promise<string[]> {
  const ends = await admin.topicOffsets(topic);
  const r = await db.pool.query<{ partition: number; first: string; last: string }>(
    `SELECT partition, min(o)::text AS first, max(o)::text AS last FROM (
       SELECT p.partition, g.o, g.o - row_number() OVER (PARTITION BY p.partition ORDER BY g.o) AS run
       FROM unnest($2::int[], $3::bigint[]) AS p(partition, hw), generate_series(0, p.hw - 1) AS g(o)
       WHERE NOT EXISTS (SELECT 1 FROM replayable.processed_events e
                         WHERE e.projection = 'ledger' AND e.topic = $1 AND e.partition = p.partition AND e."offset" = g.o)
     ) missing GROUP BY partition, run ORDER BY partition, min(o)`,
    [topic, ends.map((e) => e.partition), ends.map((e) => e.highWatermark)],
  );
  return r.rows.map((row) => `partition ${row.partition}: ${row.first}..${row.last}`);
}

/**
 * Expects the ledger of `db` to be the model of `stream` (every record of the topic produced from
 * it, none re-sent: `duplicateRate` 0): the balances and orders of applying each event once
 * (nothing lost, nothing applied twice), one event id per record, no offset below the high
 * watermark unapplied, no dead letter, and the group's committed offsets and the checkpoints both
 * at the high watermark of every partition.
 */
export async function expectLedgerModel(
  db: TestDatabase,
  admin: ClusterAdmin,
  topic: string,
  group: string,
  stream: LedgerStream,
): Promise<void> {
  const ends = await admin.topicOffsets(topic);
  const committed = await admin.committedOffsets(group, [topic]);
  const checkpoints = await db.pool.query<{ partition: number; next_offset: string }>(
    "SELECT partition, next_offset FROM replayable.checkpoints WHERE topic = $1 ORDER BY partition",
    [topic],
  );
  const letters = await db.pool.query<{ n: string }>("SELECT count(*) AS n FROM replayable.dead_letters");
  const highWatermarks = ends
    .map((e) => ({ partition: e.partition, offset: e.highWatermark }))
    .sort((a, b) => a.partition - b.partition);
  expect({
    checksum: await ledgerChecksumOf(db.pool),
    eventIds: await eventIdCount(db.pool),
    unapplied: await unappliedRanges(db, admin, topic),
    deadLetters: Number(letters.rows[0]!.n),
    committed: committed
      .map((c) => ({ partition: c.partition, offset: c.offset }))
      .sort((a, b) => a.partition - b.partition),
    checkpoints: checkpoints.rows.map((r) => ({ partition: r.partition, offset: r.next_offset })),
  }).toEqual({
    checksum: stream.checksum,
    eventIds: stream.events,
    unapplied: [],
    deadLetters: 0,
    committed: highWatermarks,
    checkpoints: highWatermarks,
  });
}
