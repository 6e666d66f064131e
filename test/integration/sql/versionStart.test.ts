/**
 * readVersionStart against a real PostgreSQL: a version's start offsets come from its latest
 * `create` audit row (`offsets.partitions[].to`), its times from the registry and PostgreSQL's clock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertVersion, insertVersionAudit } from "../../../src/sql/projectionVersions.js";
import { readVersionStart } from "../../../src/sql/versionStart.js";
import { createTestDatabase, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase(false);
});
afterAll(async () => {
  await db?.drop();
});

const who = { osUser: "test", host: "test", forced: false };

describe("readVersionStart", () => {
  it("reads the offsets the version's group was set to, and how long ago it was created", async () => {
    const client = await db.pool.connect();
    try {
      const row = {
        projection: "sales",
        schemaName: "sales_v1",
        groupId: "sales-v1",
        state: "live" as const,
      };
      await insertVersion(client, { ...row, version: 1 });
      await insertVersionAudit(client, {
        projection: "sales",
        action: "create",
        version: 1,
        ...who,
        offsets: { views: [] },
      });
      await insertVersion(client, {
        ...row,
        version: 2,
        schemaName: "sales_v2",
        groupId: "sales-v2",
        state: "shadow",
      });
      await insertVersionAudit(client, {
        projection: "sales",
        action: "create",
        version: 2,
        ...who,
        offsets: {
          partitions: [
            { topic: "orders", partition: 0, from: null, to: "5", logStartOffset: "5", highWatermark: "9" },
            {
              topic: "orders",
              partition: 1,
              from: null,
              to: "9007199254740993",
              logStartOffset: "0",
              highWatermark: "9",
            },
            { topic: "orders", partition: 2, to: 7 },
          ],
          missingTopics: [],
        },
      });
      await client.query(
        "UPDATE replayable.projection_versions SET created_at = now() - interval '10 seconds' WHERE projection = 'sales' AND version = 2",
      );
    } finally {
      client.release();
    }
    const start = await readVersionStart(db.pool, "sales", 2);
    expect(start?.offsets).toEqual([
      { topic: "orders", partition: 0, offset: "5" },
      { topic: "orders", partition: 1, offset: "9007199254740993" },
    ]);
    const age = start!.nowMs - start!.createdAtMs;
    expect(age).toBeGreaterThanOrEqual(10_000);
    expect(age).toBeLessThan(60_000);
    expect((await readVersionStart(db.pool, "sales", 1))?.offsets).toEqual([]);
    expect(await readVersionStart(db.pool, "sales", 3)).toBeUndefined();
  });
});
