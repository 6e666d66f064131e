DROP INDEX "replayable"."processed_events_source_idx";--> statement-breakpoint
CREATE INDEX "processed_events_offset_brin" ON "replayable"."processed_events" USING brin ("offset");