CREATE SCHEMA IF NOT EXISTS "replayable";
--> statement-breakpoint
CREATE SCHEMA "ledger";
--> statement-breakpoint
CREATE SCHEMA "github";
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
	"resolved_at" timestamp with time zone,
	"resolution" text
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
CREATE TABLE "ledger"."ledger_accounts" (
	"account_id" text PRIMARY KEY NOT NULL,
	"balance_cents" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ledger"."ledger_orders" (
	"order_id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"amount_cents" bigint NOT NULL,
	"state" text NOT NULL,
	"paid_at" timestamp with time zone,
	"shipped_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "github"."github_actor_pushes" (
	"actor" text PRIMARY KEY NOT NULL,
	"pushes" bigint DEFAULT 0 NOT NULL,
	"commits" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "github"."github_repo_activity" (
	"repo" text NOT NULL,
	"event_type" text NOT NULL,
	"events" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "github_repo_activity_repo_event_type_pk" PRIMARY KEY("repo","event_type")
);
--> statement-breakpoint
CREATE INDEX "dead_letters_source_idx" ON "replayable"."dead_letters" USING btree ("projection","topic","partition","offset");--> statement-breakpoint
CREATE INDEX "processed_events_source_idx" ON "replayable"."processed_events" USING btree ("projection","topic","partition","offset");