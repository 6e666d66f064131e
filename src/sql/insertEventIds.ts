/**
 * docs/design.md step 4: record a batch's event ids. The unique key decides: an id is fresh only
 * when this transaction's INSERT of it succeeded (never SELECT-then-decide-by-absence).
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

/** The row of each digest in `$6`, cut by ordinality: `NULL` for {@link NO_DIGEST}. */
const DIGEST_OF_ROW = `NULLIF(substring($6::bytea FROM (e.n::integer - 1) * ${DIGEST_BYTES} + 1 FOR ${DIGEST_BYTES}), $7::bytea)`;
/** The batch as rows (id, offset, position), in the order of `$4`, which the caller sorts by event id. */
const BATCH_ROWS = `e AS MATERIALIZED (
       SELECT i.id, i.off, i.n FROM unnest($4::text[], $5::bigint[]) WITH ORDINALITY AS i(id, off, n)
     )`;

/**
 * The common path: one statement looks the ids up in the primary key and inserts the others with a
 * plain INSERT (no ON CONFLICT: PostgreSQL's speculative insertion costs about as much again per
 * row, docs/benchmarks.md "Event-id dedupe: where PostgreSQL spends it"), returning the rows
 * found, with where each was first seen. The look-up only saves work: the unique key still
 * decides, since an id another transaction recorded meanwhile (not in this statement's snapshot)
 * makes the INSERT fail with unique_violation, and the caller then takes {@link INSERT_ON_CONFLICT}.
 *
 * The digests go as one binary parameter (node-postgres sends a Buffer in binary format), cut
 * into 32-byte pieces by ordinality: no hex text per digest to build in Node and parse in PostgreSQL.
 */
const LOOK_UP_AND_INSERT = {
  // A named statement: parsed and planned once per connection, it runs in every transaction.
  name: "replayable_insert_event_ids_v4",
  text: `WITH ${BATCH_ROWS}, seen AS MATERIALIZED (
       SELECT p.event_id, p.topic, p.partition, p."offset", p.value_sha256 FROM replayable.processed_events p
       WHERE p.projection = $1 AND p.event_id = ANY($4::text[])
     ), ins AS (
       -- In the order of $4 (see insertEventIds).
       INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset", value_sha256)
       SELECT $1, e.id, $2, $3, e.off, ${DIGEST_OF_ROW}
       FROM e WHERE NOT EXISTS (SELECT 1 FROM seen WHERE seen.event_id = e.id) ORDER BY e.n
     )
     SELECT event_id, topic, partition, "offset", value_sha256 FROM seen`,
} as const;

/**
 * The path after a unique_violation (another transaction recorded one of the ids meanwhile):
 * `ON CONFLICT DO NOTHING`, returning only the ids that were NOT inserted.
 */
const INSERT_ON_CONFLICT = {
  name: "replayable_insert_event_ids_v3",
  text: `WITH ${BATCH_ROWS}, ins AS (
       -- In the order of $4 (see insertEventIds).
       INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset", value_sha256)
       SELECT $1, e.id, $2, $3, e.off, ${DIGEST_OF_ROW}
       FROM e ORDER BY e.n
       ON CONFLICT DO NOTHING
       RETURNING event_id
     )
     SELECT e.id AS event_id FROM e WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.event_id = e.id)`,
} as const;

/** The savepoint {@link LOOK_UP_AND_INSERT} runs in, so that its unique_violation aborts only itself. */
const SAVEPOINT = "replayable_event_ids";
/** The primary key of replayable.processed_events (migration 0000): its violation means "recorded meanwhile". */
const PRIMARY_KEY = "processed_events_projection_event_id_pk";

/** Where the ids not inserted were first seen (a batch with a re-sent event runs it). */
const SELECT_PRIOR = {
  name: "replayable_select_event_ids",
  text: `SELECT event_id, topic, partition, "offset", value_sha256 FROM replayable.processed_events
     WHERE projection = $1 AND event_id = ANY($2::text[])`,
} as const;

/**
 * Records the ids (unique within `rows`), inside the caller's transaction (BEGIN … COMMIT: it
 * takes a savepoint), and returns the ids that were recorded before (`conflicts`)
 * and, for those still there, where they were first seen (`seen`).
 *
 * Common path, inside a savepoint: {@link LOOK_UP_AND_INSERT} reads the ids already recorded and
 * inserts the others with a plain INSERT. When that INSERT meets an id another transaction recorded
 * after the statement's snapshot (PostgreSQL waits for that transaction if it is still open, then
 * raises unique_violation 23505 on the primary key), the savepoint is rolled back and
 * {@link INSERT_ON_CONFLICT} decides with `ON CONFLICT DO NOTHING`; a second statement then reads
 * where the ids not inserted were first seen (in READ COMMITTED it sees a row another transaction
 * committed after this one began). Either way no fresh id is ever taken for a duplicate, nor a
 * duplicate for a fresh id.
 *
 * The rows are inserted in ascending event-id order (UTF-16 code units), not in offset order: an
 * insert that meets another transaction's uncommitted row of the same id waits for that
 * transaction (PostgreSQL "INSERT", ON CONFLICT), so two partitions' batches holding the same ids
 * in opposite orders would each wait for the other (deadlock, 40P01). In one order, the later one
 * waits and none cycles. Results are keyed by id, so the order changes nothing else. Both paths
 * insert in that order; the look-up takes no row locks.
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
  const values = [projection, topic, partition, ids, offsets, digests, NO_DIGEST];
  await client.query(`SAVEPOINT ${SAVEPOINT}`);
  let found: pg.QueryResult<PriorRow>;
  try {
    found = await client.query<PriorRow>({ ...LOOK_UP_AND_INSERT, values });
  } catch (error) {
    if (!isPrimaryKeyViolation(error)) throw error;
    await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
    return insertOnConflict(client, projection, values);
  }
  await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
  const seen = seenOf(found.rows);
  return { conflicts: new Set(seen.keys()), seen };
}

/** A row of replayable.processed_events as the look-ups return it. */
interface PriorRow {
  event_id: string;
  topic: string;
  partition: number;
  offset: string;
  value_sha256: Buffer | null;
}

/** The slow path: ON CONFLICT DO NOTHING decides, then a second statement reads where the ids not inserted were first seen. */
async function insertOnConflict(
  client: pg.ClientBase,
  projection: string,
  values: unknown[],
): Promise<{ conflicts: Set<string>; seen: Map<string, SeenEventId> }> {
  const result = await client.query<{ event_id: string }>({ ...INSERT_ON_CONFLICT, values });
  if (result.rows.length === 0) return { conflicts: new Set(), seen: new Map() };
  const missing = result.rows.map((r) => r.event_id);
  const prior = await client.query<PriorRow>({ ...SELECT_PRIOR, values: [projection, missing] });
  return { conflicts: new Set(missing), seen: seenOf(prior.rows) };
}

function seenOf(rows: readonly PriorRow[]): Map<string, SeenEventId> {
  const seen = new Map<string, SeenEventId>();
  for (const r of rows) {
    seen.set(r.event_id, {
      topic: r.topic,
      partition: r.partition,
      offset: r.offset,
      valueSha256: r.value_sha256 === null ? null : r.value_sha256.toString("hex"),
    });
  }
  return seen;
}

/** True for unique_violation (23505) of the primary key of replayable.processed_events. */
function isPrimaryKeyViolation(error: unknown): boolean {
  const e = error as { code?: unknown; constraint?: unknown };
  return e.code === "23505" && e.constraint === PRIMARY_KEY;
}

/** Ascending by event id in UTF-16 code unit order: the same in every transaction, whatever the database collation. */
function byEventId(a: EventIdRow, b: EventIdRow): number {
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}
