-- The event-id key compared byte by byte (COLLATE "C") instead of through the database's collation
-- (docs/benchmarks.md "Event-id dedupe: where PostgreSQL spends it"). Equality is unchanged (both
-- collations are deterministic), so no row changes and no key can start or stop colliding. One
-- ALTER TABLE, so the primary key index is rebuilt once; the table itself is not rewritten (same
-- type). It holds an ACCESS EXCLUSIVE lock on replayable.processed_events while the index builds.
ALTER TABLE "replayable"."processed_events" ALTER COLUMN "projection" SET DATA TYPE text COLLATE "C", ALTER COLUMN "event_id" SET DATA TYPE text COLLATE "C";
