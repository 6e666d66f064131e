/**
 * The tables of blue/green projection versions (docs/design.md "Blue/green versions"), in schema
 * `replayable`, with a migrations folder of their own (`drizzle/versions/`, tracked in
 * `replayable."__drizzle_migrations@versions"`) so they evolve apart from the engine's chain.
 * drizzle-kit generates the migrations from this file (`npm run db:generate:versions`).
 */
import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { replayableSchema } from "./schema.js";

/**
 * The states of a version: `live` (the views of the stable schema select from it), `shadow` (being
 * built or checked, not read), `retired` (a former live version, kept for `rollback`), `dropped`
 * (its schema and dedupe state removed; the row stays so the number is never reused).
 */
export const VERSION_STATES = ["live", "shadow", "retired", "dropped"] as const;

/** One row per (projection, version): its schema, consumer group and state. */
export const projectionVersions = replayableSchema.table(
  "projection_versions",
  {
    projection: text("projection").notNull(),
    version: integer("version").notNull(),
    /** `<projection>_v<version>`: where the version's tables are. */
    schemaName: text("schema_name").notNull(),
    /** The version's consumer group, `<group>-v<version>`. */
    groupId: text("group_id").notNull(),
    /** One of {@link VERSION_STATES}. */
    state: text("state").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    promotedAt: timestamp("promoted_at", { withTimezone: true }),
    retiredAt: timestamp("retired_at", { withTimezone: true }),
    droppedAt: timestamp("dropped_at", { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.projection, t.version] }),
    // Exactly one live version per projection.
    uniqueIndex("projection_versions_one_live")
      .on(t.projection)
      .where(sql`${t.state} = 'live'`),
    check("projection_versions_state_check", sql`${t.state} IN ('live', 'shadow', 'retired', 'dropped')`),
  ],
);

/** The actions the audit records. */
export const VERSION_ACTIONS = ["create", "promote", "rollback", "drop"] as const;

/** Every blue/green action: who, when, which versions, offsets and checksums. */
export const projectionVersionAudit = replayableSchema.table(
  "projection_version_audit",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    projection: text("projection").notNull(),
    /** One of {@link VERSION_ACTIONS}. */
    action: text("action").notNull(),
    /** The version acted on (created, promoted, rolled back to, dropped). */
    version: integer("version").notNull(),
    /** The live version before the action (promote, rollback), else NULL. */
    fromVersion: integer("from_version"),
    osUser: text("os_user").notNull(),
    host: text("host").notNull(),
    forced: boolean("forced").notNull().default(false),
    /** Per partition: log start offset, high watermark, checkpoints of the versions involved. */
    offsets: jsonb("offsets")
      .notNull()
      .default(sql`'{}'::jsonb`),
    /** Per table and version: rows and md5 (src/sql/tableChecksums.ts). */
    checksums: jsonb("checksums")
      .notNull()
      .default(sql`'{}'::jsonb`),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("projection_version_audit_projection_idx").on(t.projection, t.id),
    check(
      "projection_version_audit_action_check",
      sql`${t.action} IN ('create', 'promote', 'rollback', 'drop')`,
    ),
  ],
);
