/**
 * Test helpers for the real stack: every test gets its own database, topic and group id
 * (platformatic/kafka's and pg-boss's habit), so files run in parallel without sharing state.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, onTestFinished } from "vitest";
import pg from "pg";
import { createPool } from "../../src/db/pool.js";
import { migrate } from "../../src/db/migrate.js";
import { exampleProjections } from "../../src/projections/registry.js";
import { KafkaAdmin, type ClusterAdmin } from "../../src/kafka/admin.js";
import { createKafka } from "../../src/kafka/client.js";
import { PlatformaticAdmin } from "../../src/kafka/platformatic/platformaticAdmin.js";
import { createLogger } from "../../src/logger.js";

/** Brokers of the local stack. */
export const BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
/**
 * The Kafka client of the members the tests run (KAFKA_CLIENT, and KAFKA_GROUP_PROTOCOL; src/config.ts),
 * from the test run's environment: `KAFKA_CLIENT=platformatic npx vitest run …` runs the chosen
 * files' members on @platformatic/kafka. Members started as processes inherit the variable; members run in the test
 * process get it through this (spread into the variables given to `loadConfig`).
 */
export const TEST_CLIENT_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  (["KAFKA_CLIENT", "KAFKA_GROUP_PROTOCOL"] as const).flatMap((name) => {
    const value = process.env[name];
    return value === undefined ? [] : [[name, value]];
  }),
);

/** A URL of the server with a database we may CREATE DATABASE from. */
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A name unique to this test run, e.g. `ledger-3f9a1c2e`. Lower case, Kafka- and PostgreSQL-safe. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString("hex")}`;
}

/** A fresh, migrated database; `drop()` removes it. */
export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  readonly pool: pg.Pool;
  drop(): Promise<void>;
}

/**
 * Creates a database of its own for one test file, migrated with replayable's schema and the
 * example projections' (`ledger`, `github`) unless `examples` is false. The versioned github
 * projection's version 1 gets the group `<database name>-v1`, of its own like the database
 * (read it with {@link liveVersionGroup}).
 */
export async function createTestDatabase(examples = true): Promise<TestDatabase> {
  const name = uniqueName("rt");
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  const pool = createPool({ connectionString: url.toString(), max: 4 });
  await migrate(pool, examples ? exampleProjections() : [], { groupId: name });
  return {
    name,
    url: url.toString(),
    pool,
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** The consumer group of the live version of the versioned projection `projection` in `db`. */
export async function liveVersionGroup(db: TestDatabase, projection: string): Promise<string> {
  const r = await db.pool.query<{ group_id: string }>(
    "SELECT group_id FROM replayable.projection_versions WHERE projection = $1 AND state = 'live'",
    [projection],
  );
  const group = r.rows[0]?.group_id;
  if (group === undefined) throw new Error(`${projection} has no live version in ${db.name}`);
  return group;
}

/** A KafkaJS client and admin for tests (logs only errors); `brokers` defaults to {@link BROKERS}. */
export function testKafka(brokers: readonly string[] = BROKERS) {
  return createKafka({ brokers: [...brokers], clientId: "replayable-test", log: createLogger("error") });
}

/**
 * Connects an admin client over the Kafka client under test (TEST_CLIENT_ENV's KAFKA_CLIENT), so
 * the tests see a group as the members' client does: KafkaJS's DescribeGroups reports a KIP-848
 * group as Dead with no members, @platformatic/kafka's admin asks ConsumerGroupDescribe. Close it
 * in afterAll. `brokers` defaults to {@link BROKERS}.
 */
export async function testAdmin(brokers: readonly string[] = BROKERS): Promise<ClusterAdmin> {
  return TEST_CLIENT_ENV.KAFKA_CLIENT === "platformatic"
    ? testPlatformaticAdmin(brokers)
    : KafkaAdmin.connect(testKafka(brokers));
}

/** Connects an admin client over @platformatic/kafka (needs Node.js 22.22+ or 24.6+); close it. */
export async function testPlatformaticAdmin(
  brokers: readonly string[] = BROKERS,
): Promise<PlatformaticAdmin> {
  return PlatformaticAdmin.connect(await import("@platformatic/kafka"), {
    brokers: [...brokers],
    clientId: "replayable-test",
  });
}

/**
 * Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`
 * with `what` and the last error. No fixed sleeps: a poll with a deadline.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ""}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Waits until the group's committed offset equals the high watermark on every partition of `topic`. */
export async function waitForCaughtUp(
  admin: ClusterAdmin,
  groupId: string,
  topic: string,
  timeoutMs = 90_000,
): Promise<void> {
  await waitFor(
    `group ${groupId} to commit the high watermark of ${topic}`,
    async () => {
      const ends = await admin.topicOffsets(topic);
      const committed = await admin.committedOffsets(groupId, [topic]);
      const done = ends.every(
        (e) =>
          committed.find((c) => c.partition === e.partition)?.offset === e.highWatermark ||
          e.highWatermark === "0",
      );
      return done ? true : undefined;
    },
    timeoutMs,
  );
}

/** What {@link useStack} gives a test file: its admin client and the current test's database. */
export interface Stack {
  readonly admin: ClusterAdmin;
  readonly db: TestDatabase;
}

/**
 * Registers the hooks most integration files share: one Kafka admin client for the file and a
 * fresh, migrated database for each test (dropped when the test finishes).
 */
export function useStack(): Stack {
  let admin: ClusterAdmin | undefined;
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    admin = await testAdmin();
  });
  afterAll(async () => {
    await admin?.close();
  });
  beforeEach(async () => {
    const current = await createTestDatabase();
    db = current;
    onTestFinished(() => current.drop());
  });
  return {
    get admin() {
      if (admin === undefined) throw new Error("useStack: the admin client is made in beforeAll");
      return admin;
    },
    get db() {
      if (db === undefined) throw new Error("useStack: the database is made in beforeEach");
      return db;
    },
  };
}
