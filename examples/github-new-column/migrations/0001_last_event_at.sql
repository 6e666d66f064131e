ALTER TABLE "github_repo_activity" ADD COLUMN "last_event_at" timestamp with time zone;
