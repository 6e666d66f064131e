/**
 * The advisory-lock session asks the server to notice a dead member (issue 25, the soak's finding:
 * a member whose connection went silent kept the projection's shared lock on the server, and
 * `replay --execute` and `rebuild --execute` were refused until the server's TCP gave up, two
 * hours at Linux defaults). The session sets the server's keepalive and TCP_USER_TIMEOUT for its
 * own backend, so the backend, and with it the lock, ends within about half a minute of the peer
 * going away (PostgreSQL "Connection Settings": tcp_keepalives_*, tcp_user_timeout).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPool } from "../../../src/db/pool.js";
import { ProjectionLockSession } from "../../../src/engine/projectionLockSession.js";
import { createLogger } from "../../../src/logger.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

it("sets the server's keepalive and TCP user timeout on the lock's own session", async () => {
  const projection = uniqueName("p");
  // One connection: after release() the pool hands the lock's session back, settings and all.
  const pool = createPool({ connectionString: db.url, max: 1, applicationName: `${projection}:lock` });
  const abort = new AbortController();
  const session = new ProjectionLockSession({
    pool,
    projection,
    retry: { initialMs: 50, maxMs: 200 },
    keepAliveMs: 12_000,
    signal: abort.signal,
    onMustStop: () => undefined,
    log: createLogger("silent"),
  });
  try {
    await session.take();
    await session.release();
    const { rows } = await pool.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings
       WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout')
       ORDER BY name`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.name, r.setting]))).toEqual({
      tcp_keepalives_count: "3",
      tcp_keepalives_idle: "12",
      tcp_keepalives_interval: "5",
      tcp_user_timeout: "27000",
    });
  } finally {
    abort.abort();
    await pool.end();
  }
});
