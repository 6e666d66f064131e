/**
 * DESIGN.md step 4: record a batch's event ids in one statement. The unique key decides
 * (never SELECT-then-INSERT): an id not returned was already recorded.
 */
import type pg from "pg";

/** One event id to record, with where it was seen and a SHA-256 of the record's value. */
export interface EventIdRow {
  readonly eventId: string;
  readonly offset: string;
  readonly valueSha256: Buffer | null;
}

/** What {@link insertEventIds} found for an id that was already recorded. */
export interface SeenEventId {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly valueSha256: Buffer | null;
}

/**
 * Inserts the ids (unique within `rows`) with ON CONFLICT DO NOTHING RETURNING, and returns
 * the set of ids inserted now plus, for the others, where they were first seen.
 */
export async function insertEventIds(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
  rows: readonly EventIdRow[],
): Promise<{ inserted: Set<string>; seen: Map<string, SeenEventId> }> {
  if (rows.length === 0) return { inserted: new Set(), seen: new Map() };
  const result = await client.query<{ event_id: string }>({
    // A named statement: parsed and planned once per connection, it runs in every transaction.
    name: "replayable_insert_event_ids",
    text: `INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset", value_sha256)
     SELECT $1, e.id, $2, $3, e.off, e.sha
     FROM unnest($4::text[], $5::bigint[], $6::bytea[]) AS e(id, off, sha)
     ON CONFLICT DO NOTHING
     RETURNING event_id`,
    values: [
      projection,
      topic,
      partition,
      rows.map((r) => r.eventId),
      rows.map((r) => r.offset),
      rows.map((r) => r.valueSha256),
    ],
  });
  const inserted = new Set(result.rows.map((r) => r.event_id));
  const missing = rows.filter((r) => !inserted.has(r.eventId)).map((r) => r.eventId);
  const seen = new Map<string, SeenEventId>();
  if (missing.length > 0) {
    const prior = await client.query<{
      event_id: string;
      topic: string;
      partition: number;
      offset: string;
      value_sha256: Buffer | null;
    }>(
      `SELECT event_id, topic, partition, "offset", value_sha256 FROM replayable.processed_events
       WHERE projection = $1 AND event_id = ANY($2::text[])`,
      [projection, missing],
    );
    for (const r of prior.rows) {
      seen.set(r.event_id, {
        topic: r.topic,
        partition: r.partition,
        offset: r.offset,
        valueSha256: r.value_sha256,
      });
    }
  }
  return { inserted, seen };
}
