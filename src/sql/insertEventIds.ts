/**
 * docs/design.md "The transaction", step 4: record a batch's event ids in one statement. The unique key decides
 * (never SELECT-then-INSERT): an id not inserted was already recorded.
 */
import type pg from "pg";

/** One event id to record, with where it was seen and a SHA-256 of the record's value. */
export interface EventIdRow {
  readonly eventId: string;
  readonly offset: string;
  /** SHA-256 of the value as 64 hex digits, or null for a record with a null value. */
  readonly valueSha256: string | null;
}

/** What {@link insertEventIds} found for an id that was already recorded. */
export interface SeenEventId {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  /** As recorded: 64 hex digits, or null. */
  readonly valueSha256: string | null;
}

/** Bytes of one SHA-256 digest. */
const DIGEST_BYTES = 32;
/** Stands for "no digest" (a null value) in the packed digests; no SHA-256 output is all zeros in practice (2^-256). */
const NO_DIGEST = Buffer.alloc(DIGEST_BYTES);

/**
 * Where an id already recorded was first seen, read through the primary key one id at a time: the
 * `OFFSET 0` keeps PostgreSQL from flattening the subquery into a join, so every id is one index
 * probe on (projection, event_id) whatever the table's statistics say. As a plain join or
 * `event_id = ANY($ids)`, the planner, told by missing or stale statistics (a table autovacuum has
 * not analyzed yet) that the projection has few rows, read every row of the projection and
 * filtered it instead, once per transaction (docs/benchmarks.md "Event ids at 24 partitions").
 * `ids` is a relation of ids named `m` with a column `id`.
 */
const FIRST_SEEN = `LEFT JOIN LATERAL (
       SELECT q.topic, q.partition, q."offset", q.value_sha256 FROM replayable.processed_events q
       WHERE q.projection = $1 AND q.event_id = m.id
       OFFSET 0
     ) p ON true`;

/**
 * The digests go as one binary parameter (node-postgres sends a Buffer in binary format), cut
 * into 32-byte pieces by ordinality: no hex text per digest to build in Node and parse in
 * PostgreSQL. The statement returns only the ids that were NOT inserted (usually none), each with
 * where it was first seen as the statement's snapshot shows it (topic NULL when the row was
 * committed by another transaction after that snapshot), so the common case reads no rows back and
 * a batch with a re-sent id needs no second statement.
 */
const INSERT = {
  // A named statement: parsed and planned once per connection, it runs in every transaction.
  name: "replayable_insert_event_ids_v5",
  text: `WITH e AS MATERIALIZED (
       SELECT i.id, i.off, i.n FROM unnest($4::text[], $5::bigint[]) WITH ORDINALITY AS i(id, off, n)
     ), ins AS (
       -- In the order of $4, which the caller sorts by event id (see insertEventIds).
       INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset", value_sha256)
       SELECT $1, e.id, $2, $3, e.off,
              NULLIF(substring($6::bytea FROM (e.n::integer - 1) * ${DIGEST_BYTES} + 1 FOR ${DIGEST_BYTES}), $7::bytea)
       FROM e ORDER BY e.n
       ON CONFLICT DO NOTHING
       RETURNING event_id
     ), m AS MATERIALIZED (
       SELECT e.id FROM e WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.event_id = e.id)
     )
     SELECT m.id AS event_id, p.topic, p.partition, p."offset", p.value_sha256 FROM m ${FIRST_SEEN}`,
} as const;

/**
 * Where the ids not inserted and not in the insert's snapshot were first seen: rows another
 * transaction committed after that snapshot, which in READ COMMITTED a new statement sees.
 */
const SELECT_PRIOR = {
  name: "replayable_select_event_ids_v2",
  text: `SELECT m.id AS event_id, p.topic, p.partition, p."offset", p.value_sha256
     FROM unnest($2::text[]) AS m(id) ${FIRST_SEEN}`,
} as const;

/** A row of {@link INSERT} or {@link SELECT_PRIOR}: an id not inserted, and where it was first seen (NULLs: not found). */
interface PriorRow {
  event_id: string;
  topic: string | null;
  partition: number | null;
  offset: string | null;
  value_sha256: Buffer | null;
}

/**
 * Inserts the ids (unique within `rows`) with `ON CONFLICT DO NOTHING`, and returns the ids that
 * were not inserted (`conflicts`: recorded before) and, for those still there, where they were
 * first seen (`seen`). The same statement reads that for the rows in its snapshot; a second one
 * runs only for an id another transaction committed after that snapshot (in READ COMMITTED a new
 * statement sees it).
 *
 * The rows are inserted in ascending event-id order (UTF-16 code units), not in offset order: an
 * insert that meets another transaction's uncommitted row of the same id waits for that
 * transaction (PostgreSQL "INSERT", ON CONFLICT), so two partitions' batches holding the same ids
 * in opposite orders would each wait for the other (deadlock, 40P01). In one order, the later one
 * waits and none cycles. Results are keyed by id, so the order changes nothing else.
 * @throws Error when a digest is not 64 hex digits (a bug in the caller).
 */
export async function insertEventIds(
  client: pg.ClientBase,
  projection: string,
  topic: string,
  partition: number,
  rows: readonly EventIdRow[],
): Promise<{ conflicts: Set<string>; seen: Map<string, SeenEventId> }> {
  if (rows.length === 0) return { conflicts: new Set(), seen: new Map() };
  const sorted = [...rows].sort(byEventId);
  const ids = new Array<string>(sorted.length);
  const offsets = new Array<string>(sorted.length);
  const digests = Buffer.allocUnsafe(sorted.length * DIGEST_BYTES);
  sorted.forEach((row, i) => {
    ids[i] = row.eventId;
    offsets[i] = row.offset;
    const digest = row.valueSha256;
    if (digest === null) {
      NO_DIGEST.copy(digests, i * DIGEST_BYTES);
    } else if (
      digest.length !== 2 * DIGEST_BYTES ||
      digests.write(digest, i * DIGEST_BYTES, DIGEST_BYTES, "hex") !== DIGEST_BYTES
    ) {
      throw new Error(`valueSha256 of ${row.eventId} is not ${2 * DIGEST_BYTES} hex digits`);
    }
  });
  const result = await client.query<PriorRow>({
    ...INSERT,
    values: [projection, topic, partition, ids, offsets, digests, NO_DIGEST],
  });
  const seen = new Map<string, SeenEventId>();
  if (result.rows.length === 0) return { conflicts: new Set(), seen };
  addSeen(seen, result.rows);
  // Recorded by a transaction that committed after the insert's snapshot: a new statement sees it.
  const unseen = result.rows.filter((r) => r.topic === null).map((r) => r.event_id);
  if (unseen.length > 0)
    addSeen(seen, (await client.query<PriorRow>({ ...SELECT_PRIOR, values: [projection, unseen] })).rows);
  return { conflicts: new Set(result.rows.map((r) => r.event_id)), seen };
}

/** Adds the rows that found where their id was first seen to `seen`. */
function addSeen(seen: Map<string, SeenEventId>, rows: readonly PriorRow[]): void {
  for (const r of rows) {
    if (r.topic === null || r.partition === null || r.offset === null) continue;
    seen.set(r.event_id, {
      topic: r.topic,
      partition: r.partition,
      offset: r.offset,
      valueSha256: r.value_sha256 === null ? null : r.value_sha256.toString("hex"),
    });
  }
}

/** Ascending by event id in UTF-16 code unit order: the same in every transaction, whatever the database collation. */
function byEventId(a: EventIdRow, b: EventIdRow): number {
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}
