/**
 * The framework's own tables, in the PostgreSQL schema `replayable`
 * (projection tables live in schemas of their own). drizzle-kit generates the
 * migrations in `drizzle/` from this file and the projections' schema files.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  customType,
  index,
  integer,
  jsonb,
  pgSchema,
  primaryKey,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

/** PostgreSQL `bytea` as a Node Buffer: dead letters keep a record's exact bytes. */
export const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => "bytea",
});

/** The framework's schema. */
export const replayableSchema = pgSchema("replayable");

/**
 * Per (projection, topic, partition): the next offset to apply. Every offset below it was
 * applied or dead-lettered. Changed only inside the transaction that applies records
 * (DESIGN.md "The transaction"); its row lock is the fence between two members.
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
 * Event ids a projection has seen (dedupe key `event-id`), with where each was first seen
 * and a SHA-256 of its value, so a reused id with a different payload is told apart from a redelivery.
 */
export const processedEvents = replayableSchema.table(
  "processed_events",
  {
    projection: text("projection").notNull(),
    eventId: text("event_id").notNull(),
    topic: text("topic").notNull(),
    partition: integer("partition").notNull(),
    offset: bigint("offset", { mode: "bigint" }).notNull(),
    valueSha256: bytea("value_sha256"),
    processedAt: timestamp("processed_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.projection, t.eventId] }),
    index("processed_events_source_idx").on(t.projection, t.topic, t.partition, t.offset),
  ],
);

/** Records that could not be applied, with their exact bytes and the error (DESIGN.md "dead letter"). */
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
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
    resolution: text("resolution"),
  },
  (t) => [index("dead_letters_source_idx").on(t.projection, t.topic, t.partition, t.offset)],
);

/** One row per `rebuild`: when, by whom, and which offsets it reset (issue #4). */
export const rebuilds = replayableSchema.table("rebuilds", {
  id: bigserial("id", { mode: "bigint" }).primaryKey(),
  projection: text("projection").notNull(),
  groupId: text("group_id").notNull(),
  osUser: text("os_user").notNull(),
  host: text("host").notNull(),
  forced: integer("forced").notNull().default(0),
  offsets: jsonb("offsets").notNull(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
});
