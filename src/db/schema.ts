/**
 * The framework's own tables, in the PostgreSQL schema `replayable`
 * (projection tables live in schemas of their own). drizzle-kit generates the
 * migrations in `drizzle/` from this file and the projections' schema files.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  check,
  customType,
  index,
  integer,
  jsonb,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

/** PostgreSQL `bytea` as a Node Buffer: dead letters keep a record's exact bytes. */
export const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => "bytea",
});

/**
 * PostgreSQL `text COLLATE "C"`: compared byte by byte (memcmp) instead of through the database's
 * collation (C.UTF-8 is not "C" to PostgreSQL, which then calls strcoll for every comparison). For
 * keys that are only compared for equality and looked up in a B-tree (drizzle/engine/0002_event_ids_collate_c).
 */
export const textC = customType<{ data: string; driverData: string }>({
  dataType: () => `text COLLATE "C"`,
});

/** The framework's schema. */
export const replayableSchema = pgSchema("replayable");

/**
 * Per (projection, topic, partition): the next offset to apply. Every offset below it was
 * applied or dead-lettered. Changed only inside the transaction that applies records
 * (docs/design.md "The transaction"); its row lock is the fence between two members.
 */
export const checkpoints = replayableSchema.table(
  "checkpoints",
  {
    projection: text("projection").notNull(),
    topic: text("topic").notNull(),
    partition: integer("partition").notNull(),
    nextOffset: bigint("next_offset", { mode: "bigint" }).notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projection, t.topic, t.partition] })],
);

/**
 * Per (projection, topic): a topic a member of the projection consumed, recorded by `run` before
 * it reads any record. The projection's topics are then known to `prune`, `status` and `rebuild`
 * even before a record of the topic was applied (no checkpoint) or committed (no committed offset):
 * `prune` must see every record of them read before it deletes an event id (docs/replay.md "prune").
 */
export const projectionTopics = replayableSchema.table(
  "projection_topics",
  {
    projection: text("projection").notNull(),
    topic: text("topic").notNull(),
    firstConsumedAt: timestamp("first_consumed_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projection, t.topic] })],
);

/**
 * Event ids a projection has seen (dedupe key `event-id`), with where each was first seen
 * and a SHA-256 of its value, so a reused id with a different payload is told apart from a redelivery.
 */
export const processedEvents = replayableSchema.table(
  "processed_events",
  {
    // COLLATE "C": the primary key's look-ups and inserts compare bytes (docs/benchmarks.md
    // "Event-id dedupe: where PostgreSQL spends it").
    projection: textC("projection").notNull(),
    eventId: textC("event_id").notNull(),
    topic: text("topic").notNull(),
    partition: integer("partition").notNull(),
    offset: bigint("offset", { mode: "bigint" }).notNull(),
    valueSha256: bytea("value_sha256"),
    processedAt: timestamp("processed_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.projection, t.eventId] }),
    // BRIN, not B-tree: pruning (`offset` below the log start offset) is a rare operator command,
    // while a B-tree on (projection, topic, partition, offset) cost every insert about 1.2 µs of
    // PostgreSQL CPU per event id (docs/benchmarks.md). Ids arrive in roughly offset order, so
    // block ranges summarise offsets tightly.
    index("processed_events_offset_brin").using("brin", t.offset),
  ],
);

/**
 * How a dead letter was resolved (`resolution`); NULL while unresolved. `superseded`: a rebuild
 * emptied the state the letter was written in and handed its record back to the consumer, which
 * reads it again (applied, a duplicate, or dead-lettered anew in a letter of its own), so the letter
 * is never applied (migration 0003, docs/design.md "Dead letters and rebuilds").
 */
export const DEAD_LETTER_RESOLUTIONS = ["applied", "duplicate", "discarded", "superseded"] as const;

/**
 * Records that could not be applied, with their exact bytes and the error (docs/design.md "dead letter").
 * Written in the transaction that advances the checkpoint past the record. `replayable dead-letters
 * retry` re-applies one (`attempts` counts every try, `error_*` keep the latest failure) and sets
 * `resolved_at`/`resolution`; `discard` resolves without applying. At most one unresolved row per
 * record (projection, topic, partition, offset).
 */
export const deadLetters = replayableSchema.table(
  "dead_letters",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    projection: text("projection").notNull(),
    topic: text("topic").notNull(),
    partition: integer("partition").notNull(),
    offset: bigint("offset", { mode: "bigint" }).notNull(),
    recordTimestamp: timestamp("record_timestamp", { withTimezone: true }),
    key: bytea("key"),
    value: bytea("value"),
    /** Header name → list of base64 values (headers may repeat and hold any bytes). */
    headers: jsonb("headers")
      .notNull()
      .default(sql`'{}'::jsonb`),
    errorCode: text("error_code").notNull(),
    errorMessage: text("error_message").notNull(),
    attempts: integer("attempts").notNull().default(1),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /** When `retry` last tried the record (NULL: only the consumer has). */
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true }),
    /** When the record was also published to REPLAYABLE_DLQ_TOPIC (NULL: not configured or failed). */
    publishedAt: timestamp("published_at", { withTimezone: true }),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
    /** One of {@link DEAD_LETTER_RESOLUTIONS}. */
    resolution: text("resolution"),
    /** Who resolved it: `user@host` of the CLI. */
    resolvedBy: text("resolved_by"),
    /** When `discard --delete-bytes` removed key, value and headers. */
    bytesDeletedAt: timestamp("bytes_deleted_at", { withTimezone: true }),
  },
  (t) => [
    index("dead_letters_source_idx").on(t.projection, t.topic, t.partition, t.offset),
    uniqueIndex("dead_letters_unresolved_source_key")
      .on(t.projection, t.topic, t.partition, t.offset)
      .where(sql`${t.resolvedAt} IS NULL`),
    index("dead_letters_created_at_idx").on(t.projection, t.createdAt),
    check(
      "dead_letters_resolution_check",
      sql`(${t.resolvedAt} IS NULL AND ${t.resolution} IS NULL) OR (${t.resolvedAt} IS NOT NULL AND ${t.resolution} IN ('applied', 'duplicate', 'discarded', 'superseded'))`,
    ),
  ],
);

/**
 * One row per `rebuild` (when, by whom, and which offsets it reset; issue #4), and one per
 * `migrate --convert-to-versioned` under the plain key it ends (`offsets.convertedTo`, the
 * version's key). The id of a
 * projection's latest row is its rebuild epoch, read in every batch transaction (with the
 * checkpoint lock): `rebuilds_projection_id_idx` makes that one index probe, however many rebuilds
 * of other projections the table holds.
 */
export const rebuilds = replayableSchema.table(
  "rebuilds",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    projection: text("projection").notNull(),
    groupId: text("group_id").notNull(),
    osUser: text("os_user").notNull(),
    host: text("host").notNull(),
    forced: integer("forced").notNull().default(0),
    offsets: jsonb("offsets").notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("rebuilds_projection_id_idx").on(t.projection, t.id)],
);
