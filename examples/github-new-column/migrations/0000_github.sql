CREATE TABLE "github_actor_pushes" (
	"actor" text PRIMARY KEY NOT NULL,
	"pushes" bigint DEFAULT 0 NOT NULL,
	"commits" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "github_repo_activity" (
	"repo" text NOT NULL,
	"event_type" text NOT NULL,
	"events" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "github_repo_activity_repo_event_type_pk" PRIMARY KEY("repo","event_type")
);
