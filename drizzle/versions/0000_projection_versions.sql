CREATE TABLE "replayable"."projection_version_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"projection" text NOT NULL,
	"action" text NOT NULL,
	"version" integer NOT NULL,
	"from_version" integer,
	"os_user" text NOT NULL,
	"host" text NOT NULL,
	"forced" boolean DEFAULT false NOT NULL,
	"offsets" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"checksums" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projection_version_audit_action_check" CHECK ("replayable"."projection_version_audit"."action" IN ('create', 'promote', 'rollback', 'drop'))
);
--> statement-breakpoint
CREATE TABLE "replayable"."projection_versions" (
	"projection" text NOT NULL,
	"version" integer NOT NULL,
	"schema_name" text NOT NULL,
	"group_id" text NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"promoted_at" timestamp with time zone,
	"retired_at" timestamp with time zone,
	"dropped_at" timestamp with time zone,
	CONSTRAINT "projection_versions_projection_version_pk" PRIMARY KEY("projection","version"),
	CONSTRAINT "projection_versions_state_check" CHECK ("replayable"."projection_versions"."state" IN ('live', 'shadow', 'retired', 'dropped'))
);
--> statement-breakpoint
CREATE INDEX "projection_version_audit_projection_idx" ON "replayable"."projection_version_audit" USING btree ("projection","id");--> statement-breakpoint
CREATE UNIQUE INDEX "projection_versions_one_live" ON "replayable"."projection_versions" USING btree ("projection") WHERE "replayable"."projection_versions"."state" = 'live';