-- IF NOT EXISTS: databases migrated by drizzle/ 0000-0003 already have this schema and its tables.
CREATE SCHEMA IF NOT EXISTS "github";
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "github"."github_actor_pushes" (
	"actor" text PRIMARY KEY NOT NULL,
	"pushes" bigint DEFAULT 0 NOT NULL,
	"commits" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "github"."github_repo_activity" (
	"repo" text NOT NULL,
	"event_type" text NOT NULL,
	"events" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "github_repo_activity_repo_event_type_pk" PRIMARY KEY("repo","event_type")
);
