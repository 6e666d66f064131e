-- The engine's own tables as migrations 0000-0003 of drizzle/ left them, without the example
-- projections' tables (those are in drizzle/ledger and drizzle/github). A database migrated by
-- drizzle/ 0000-0003 skips this migration: it is recorded with the same `when` as 0003 (see src/db/migrate.ts).
CREATE SCHEMA IF NOT EXISTS "replayable";
--> statement-breakpoint
CREATE TABLE "replayable"."checkpoints" (
	"projection" text NOT NULL,
	"topic" text NOT NULL,
	"partition" integer NOT NULL,
	"next_offset" bigint NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "checkpoints_projection_topic_partition_pk" PRIMARY KEY("projection","topic","partition")
);
--> statement-breakpoint
CREATE TABLE "replayable"."dead_letters" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"projection" text NOT NULL,
	"topic" text NOT NULL,
	"partition" integer NOT NULL,
	"offset" bigint NOT NULL,
	"record_timestamp" timestamp with time zone,
	"key" "bytea",
	"value" "bytea",
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error_code" text NOT NULL,
	"error_message" text NOT NULL,
	"attempts" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"published_at" timestamp with time zone,
	"resolved_at" timestamp with time zone,
	"resolution" text,
	"resolved_by" text,
	"bytes_deleted_at" timestamp with time zone,
	CONSTRAINT "dead_letters_resolution_check" CHECK (("replayable"."dead_letters"."resolved_at" IS NULL AND "replayable"."dead_letters"."resolution" IS NULL) OR ("replayable"."dead_letters"."resolved_at" IS NOT NULL AND "replayable"."dead_letters"."resolution" IN ('applied', 'duplicate', 'discarded', 'superseded')))
);
--> statement-breakpoint
CREATE TABLE "replayable"."processed_events" (
	"projection" text NOT NULL,
	"event_id" text NOT NULL,
	"topic" text NOT NULL,
	"partition" integer NOT NULL,
	"offset" bigint NOT NULL,
	"value_sha256" "bytea",
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "processed_events_projection_event_id_pk" PRIMARY KEY("projection","event_id")
);
--> statement-breakpoint
CREATE TABLE "replayable"."rebuilds" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"projection" text NOT NULL,
	"group_id" text NOT NULL,
	"os_user" text NOT NULL,
	"host" text NOT NULL,
	"forced" integer DEFAULT 0 NOT NULL,
	"offsets" jsonb NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "dead_letters_source_idx" ON "replayable"."dead_letters" USING btree ("projection","topic","partition","offset");--> statement-breakpoint
CREATE UNIQUE INDEX "dead_letters_unresolved_source_key" ON "replayable"."dead_letters" USING btree ("projection","topic","partition","offset") WHERE "replayable"."dead_letters"."resolved_at" IS NULL;--> statement-breakpoint
CREATE INDEX "dead_letters_created_at_idx" ON "replayable"."dead_letters" USING btree ("projection","created_at");--> statement-breakpoint
CREATE INDEX "processed_events_offset_brin" ON "replayable"."processed_events" USING brin ("offset");