-- Before the unique index: a database migrated by 0.1.0 may hold two unresolved dead letters of one record; keep the oldest.
UPDATE "replayable"."dead_letters" AS d SET "resolved_at" = now(), "resolution" = 'duplicate'
WHERE d."resolved_at" IS NULL AND EXISTS (
  SELECT 1 FROM "replayable"."dead_letters" AS o
  WHERE o."resolved_at" IS NULL AND o."projection" = d."projection" AND o."topic" = d."topic"
    AND o."partition" = d."partition" AND o."offset" = d."offset" AND o."id" < d."id"
);--> statement-breakpoint
ALTER TABLE "replayable"."dead_letters" ADD COLUMN "last_attempt_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "replayable"."dead_letters" ADD COLUMN "published_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "replayable"."dead_letters" ADD COLUMN "resolved_by" text;--> statement-breakpoint
ALTER TABLE "replayable"."dead_letters" ADD COLUMN "bytes_deleted_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "dead_letters_unresolved_source_key" ON "replayable"."dead_letters" USING btree ("projection","topic","partition","offset") WHERE "replayable"."dead_letters"."resolved_at" IS NULL;--> statement-breakpoint
CREATE INDEX "dead_letters_created_at_idx" ON "replayable"."dead_letters" USING btree ("projection","created_at");--> statement-breakpoint
ALTER TABLE "replayable"."dead_letters" ADD CONSTRAINT "dead_letters_resolution_check" CHECK (("replayable"."dead_letters"."resolved_at" IS NULL AND "replayable"."dead_letters"."resolution" IS NULL) OR ("replayable"."dead_letters"."resolved_at" IS NOT NULL AND "replayable"."dead_letters"."resolution" IN ('applied', 'duplicate', 'discarded')));