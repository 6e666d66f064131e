/**
 * Databases migrated by the 0.1.x releases (one chain in drizzle/ with the engine and both example
 * schemas) keep working after the engine and the examples were split: the old chain is finished
 * where it stopped, the engine's new baseline is skipped, the examples' migrations find their
 * tables already there, and no data is lost.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate as drizzleMigrate } from "drizzle-orm/node-postgres/migrator";
import { describe, expect, it, onTestFinished } from "vitest";
import { migrate } from "../../../src/db/migrate.js";
import { exampleProjections } from "../../../src/projections/registry.js";
import { insertEventIds } from "../../../src/sql/insertEventIds.js";
import { createTestDatabase, type TestDatabase } from "../../helpers/stack.js";

/** A database with no schema, migrated by the 0.1.x chain up to and including migration `last`. */
async function legacyDatabase(last: number): Promise<TestDatabase> {
  const db = await createTestDatabase(false);
  onTestFinished(() => db.drop());
  await db.pool.query("DROP SCHEMA replayable CASCADE");
  const folder = mkdtempSync(join(tmpdir(), "replayable-legacy-"));
  cpSync("drizzle", folder, { recursive: true });
  const journalPath = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= last);
  writeFileSync(journalPath, JSON.stringify(journal));
  const client = await db.pool.connect();
  try {
    await drizzleMigrate(drizzle(client), {
      migrationsFolder: folder,
      migrationsSchema: "replayable",
      migrationsTable: "__drizzle_migrations",
    });
  } finally {
    client.release();
  }
  return db;
}

async function constraintOf(db: TestDatabase): Promise<string> {
  const r = await db.pool.query<{ def: string }>(
    "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'dead_letters_resolution_check'",
  );
  return r.rows[0]?.def ?? "";
}

/** Migrations of the 0.1.x chain (drizzle/ 0000-0003). */
const OLD_CHAIN = 4;
/** Engine migrations after its baseline drizzle/engine/0000, applied on top of the old chain too. */
const ENGINE_AFTER_BASELINE = 3;

describe("migrate on a database of the 0.1.x releases", () => {
  it("keeps a database at 0003 with its ledger rows, recording no engine migration twice", async () => {
    const db = await legacyDatabase(3);
    await db.pool.query("INSERT INTO ledger.ledger_accounts VALUES ('a-1', 42)");
    await db.pool
      .query(`INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset")
      VALUES ('ledger', 'e-1', 't', 0, 5)`);
    // The old chain made the github tables of the non-versioned layout; github is versioned now.
    await expect(migrate(db.pool, exampleProjections())).rejects.toThrow(
      "projection github is versioned (blue/green), but schema github holds the tables github.github_actor_pushes, github.github_repo_activity",
    );
    const ledgerOnly = exampleProjections().filter((p) => p.name === "ledger");
    await migrate(db.pool, ledgerOnly);
    await migrate(db.pool, ledgerOnly);
    const engine = await db.pool.query("SELECT 1 FROM replayable.__drizzle_migrations");
    expect(engine.rowCount).toBe(OLD_CHAIN + ENGINE_AFTER_BASELINE);
    const ledger = await db.pool.query("SELECT account_id, balance_cents::text FROM ledger.ledger_accounts");
    expect(ledger.rows).toEqual([{ account_id: "a-1", balance_cents: "42" }]);
    const recorded = await db.pool.query("SELECT 1 FROM replayable.__drizzle_migrations_ledger");
    expect(recorded.rowCount).toBe(1);
    // Migration 0002: the event-id key compares bytes; the recorded id is still found by it.
    const collations = await db.pool.query<{ c: string }>(
      "SELECT column_name || ' ' || coalesce(collation_name, '') AS c FROM information_schema.columns WHERE table_schema = 'replayable' AND table_name = 'processed_events' AND column_name IN ('projection', 'event_id') ORDER BY 1",
    );
    expect(collations.rows.map((r) => r.c)).toEqual(["event_id C", "projection C"]);
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const { conflicts, seen } = await insertEventIds(client, "ledger", "t", 1, [
        { eventId: "e-1", offset: "9", valueSha256: null },
      ]);
      await client.query("COMMIT");
      expect([...conflicts]).toEqual(["e-1"]);
      expect(seen.get("e-1")).toMatchObject({ topic: "t", partition: 0, offset: "5" });
    } finally {
      client.release();
    }
  });

  it("finishes the old chain of a database left at 0001, then skips the engine baseline", async () => {
    const db = await legacyDatabase(1);
    expect(await constraintOf(db)).not.toContain("superseded");
    await migrate(db.pool);
    expect(await constraintOf(db)).toContain("superseded");
    const engine = await db.pool.query("SELECT 1 FROM replayable.__drizzle_migrations");
    expect(engine.rowCount).toBe(OLD_CHAIN + ENGINE_AFTER_BASELINE);
  });

  it("gives a new database the same engine schema as the old chain did, without example schemas", async () => {
    const db = await createTestDatabase(false);
    onTestFinished(() => db.drop());
    const legacy = await legacyDatabase(3);
    // The engine's migrations after its baseline, on both.
    await migrate(legacy.pool);
    const columns = async (d: TestDatabase) =>
      (
        await d.pool.query<{ c: string }>(
          "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || coalesce(collation_name, '') || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS c FROM information_schema.columns WHERE table_schema = 'replayable' AND table_name NOT LIKE '\\_\\_%' ORDER BY 1",
        )
      ).rows.map((r) => r.c);
    const indexes = async (d: TestDatabase) =>
      (
        await d.pool.query<{ i: string }>(
          "SELECT indexdef AS i FROM pg_indexes WHERE schemaname = 'replayable' AND tablename NOT LIKE '\\_\\_%' ORDER BY 1",
        )
      ).rows.map((r) => r.i);
    expect(await columns(db)).toEqual(await columns(legacy));
    expect(await indexes(db)).toEqual(await indexes(legacy));
    expect(await constraintOf(db)).toEqual(await constraintOf(legacy));
    const schemas = await db.pool.query("SELECT 1 FROM pg_namespace WHERE nspname IN ('ledger', 'github')");
    expect(schemas.rowCount).toBe(0);
  });
});
