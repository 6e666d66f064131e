/** Reads dead letters (for `replayable dead-letters list|show|retry|discard`), with the record's bytes. */
import type pg from "pg";
import type { KafkaRecord } from "../record.js";
import { headersFromJson, type StoredHeaders } from "./insertDeadLetter.js";

/** One row of replayable.dead_letters, the record rebuilt from its stored bytes. */
export interface DeadLetter {
  /** bigint id as a decimal string. */
  readonly id: string;
  readonly projection: string;
  /** The record as it was fetched: topic, partition, offset, timestamp (ms), key, value, headers. */
  readonly record: KafkaRecord;
  readonly errorCode: string;
  readonly errorMessage: string;
  readonly attempts: number;
  readonly createdAt: Date;
  readonly lastAttemptAt: Date | null;
  readonly publishedAt: Date | null;
  readonly resolvedAt: Date | null;
  readonly resolution: string | null;
  readonly resolvedBy: string | null;
  readonly bytesDeletedAt: Date | null;
}

/** Which dead letters to select; every field narrows the selection, none means all. */
export interface DeadLetterFilter {
  readonly projection?: string;
  readonly topic?: string;
  readonly partition?: number;
  /** Any of these error codes. */
  readonly codes?: readonly string[];
  /** created_at at or after this instant. */
  readonly since?: Date;
  /** created_at before this instant. */
  readonly until?: Date;
  /** Only these ids (decimal strings). */
  readonly ids?: readonly string[];
  /** `unresolved` (default), `resolved` or `all`. */
  readonly state?: "unresolved" | "resolved" | "all";
  /** At most this many, lowest id first; default no limit. */
  readonly limit?: number;
}

interface Row {
  id: string;
  projection: string;
  topic: string;
  partition: number;
  offset: string;
  timestamp_ms: string | null;
  key: Buffer | null;
  value: Buffer | null;
  headers: StoredHeaders;
  error_code: string;
  error_message: string;
  attempts: number;
  created_at: Date;
  last_attempt_at: Date | null;
  published_at: Date | null;
  resolved_at: Date | null;
  resolution: string | null;
  resolved_by: string | null;
  bytes_deleted_at: Date | null;
}

const COLUMNS = `id, projection, topic, partition, "offset",
  (extract(epoch FROM record_timestamp) * 1000)::bigint::text AS timestamp_ms, key, value, headers,
  error_code, error_message, attempts, created_at, last_attempt_at, published_at, resolved_at,
  resolution, resolved_by, bytes_deleted_at`;

/**
 * The dead letters matching `filter`, lowest id first: the order they were stored. Not always the
 * order of `created_at`, which is the start of the storing transaction (`now()`): two partitions'
 * transactions overlap.
 */
export async function selectDeadLetters(
  client: pg.Pool | pg.ClientBase,
  filter: DeadLetterFilter,
): Promise<DeadLetter[]> {
  const state = filter.state ?? "unresolved";
  const result = await client.query<Row>(
    `SELECT ${COLUMNS} FROM replayable.dead_letters
     WHERE ($1::text IS NULL OR projection = $1)
       AND ($2::text IS NULL OR topic = $2)
       AND ($3::int IS NULL OR partition = $3)
       AND ($4::text[] IS NULL OR error_code = ANY($4::text[]))
       AND ($5::timestamptz IS NULL OR created_at >= $5)
       AND ($6::timestamptz IS NULL OR created_at < $6)
       AND ($7::bigint[] IS NULL OR id = ANY($7::bigint[]))
       AND ($8 = 'all' OR ($8 = 'resolved') = (resolved_at IS NOT NULL))
     ORDER BY id
     LIMIT $9`,
    [
      filter.projection ?? null,
      filter.topic ?? null,
      filter.partition ?? null,
      filter.codes === undefined ? null : [...filter.codes],
      filter.since ?? null,
      filter.until ?? null,
      filter.ids === undefined ? null : [...filter.ids],
      state,
      filter.limit ?? null,
    ],
  );
  return result.rows.map(toDeadLetter);
}

/**
 * Locks one dead letter for a retry or discard (`SELECT … FOR UPDATE`): two operators retrying
 * the same letter serialize here. Call inside BEGIN … COMMIT.
 * @returns the dead letter, or undefined when no row has this id.
 */
export async function lockDeadLetter(client: pg.ClientBase, id: string): Promise<DeadLetter | undefined> {
  const result = await client.query<Row>(
    `SELECT ${COLUMNS} FROM replayable.dead_letters WHERE id = $1::bigint FOR UPDATE`,
    [id],
  );
  const row = result.rows[0];
  return row === undefined ? undefined : toDeadLetter(row);
}

function toDeadLetter(row: Row): DeadLetter {
  const headers = headersFromJson(row.headers);
  return {
    id: row.id,
    projection: row.projection,
    record: {
      topic: row.topic,
      partition: row.partition,
      offset: row.offset,
      timestamp: row.timestamp_ms ?? "-1",
      key: row.key,
      value: row.value,
      headers,
    },
    errorCode: row.error_code,
    errorMessage: row.error_message,
    attempts: row.attempts,
    createdAt: row.created_at,
    lastAttemptAt: row.last_attempt_at,
    publishedAt: row.published_at,
    resolvedAt: row.resolved_at,
    resolution: row.resolution,
    resolvedBy: row.resolved_by,
    bytesDeletedAt: row.bytes_deleted_at,
  };
}
