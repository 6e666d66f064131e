/**
 * The rebuild epoch read on the projection's advisory-lock session (issue 25, item 1; docs/design.md
 * "The rebuild epoch") against a real PostgreSQL: an answer comes only from the session taken under
 * the serial asked for, and a session whose backend was terminated proves nothing, whether or not
 * its client has heard of the loss yet; the session taken again has a new serial.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPool } from "../../../src/db/pool.js";
import { ProjectionLockSession } from "../../../src/engine/projectionLockSession.js";
import { createLogger } from "../../../src/logger.js";
import { readRebuildEpoch } from "../../../src/sql/lockCheckpoint.js";
import { createTestDatabase, uniqueName, waitFor, type TestDatabase } from "../../helpers/stack.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** The backend pid of the sessions named `application`. */
async function backends(application: string): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
    [application],
  );
  return rows.map((r) => r.pid);
}

it("reads the epoch on the session held since a serial, answers `lost` for a terminated session whether or not its client noticed, and reads on the session taken again", async () => {
  const projection = uniqueName("p");
  const application = `${projection}:lock`;
  const pool = createPool({ connectionString: db.url, max: 1, applicationName: application });
  const abort = new AbortController();
  const mustStop: Error[] = [];
  const session = new ProjectionLockSession({
    pool,
    projection,
    retry: { initialMs: 50, maxMs: 200 },
    signal: abort.signal,
    onMustStop: (error) => mustStop.push(error),
    log: createLogger("silent"),
  });
  try {
    expect(session.heldSession()).toBeUndefined();
    await session.take();
    const first = session.heldSession()!;
    expect(first).toBeDefined();
    await db.pool.query(
      `INSERT INTO replayable.rebuilds (projection, group_id, os_user, host, offsets)
       VALUES ($1, 'g', 'test', 'test', '{}')`,
      [projection],
    );
    const epoch = await readRebuildEpoch(db.pool, projection);
    expect(epoch).not.toBe("0");
    // No checkpoint yet; then the same statement reads the projection's checkpoints (and only its).
    expect(await session.readRebuildEpoch(first)).toEqual({ kind: "read", epoch, checkpoints: new Map() });
    await db.pool.query(
      `INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset)
       VALUES ($1, 't', 3, 9007199254740993), ($1 || '-other', 't', 3, 5)`,
      [projection],
    );
    const checkpoints = new Map([["t/3", "9007199254740993"]]);
    expect(await session.readRebuildEpoch(first)).toEqual({ kind: "read", epoch, checkpoints });
    expect(await session.readRebuildEpoch(first + 1)).toEqual({ kind: "lost" });

    // The backend is terminated (and with it the lock); the read is sent whether or not the client
    // has had its "error" event yet.
    const [pid] = await backends(application);
    await db.pool.query("SELECT pg_terminate_backend($1)", [pid]);
    await waitFor("the backend to exit", async () =>
      (await backends(application)).includes(pid!) ? undefined : true,
    );
    expect(await session.readRebuildEpoch(first)).toEqual({ kind: "lost" });

    // The lock is taken again on a new session, with a new serial; the old one stays lost.
    expect(await session.whenHeld(abort.signal)).toBe(true);
    const second = await waitFor("the lock taken again", () => session.heldSession());
    expect(second).toBeGreaterThan(first);
    expect(await session.readRebuildEpoch(first)).toEqual({ kind: "lost" });
    expect(await session.readRebuildEpoch(second)).toEqual({ kind: "read", epoch, checkpoints });
    expect(mustStop).toEqual([]);
  } finally {
    abort.abort();
    await session.release();
    await pool.end();
  }
});

it("sends one statement at a time on the session: the health check, epoch reads and the unlock never overlap", async () => {
  // pg 8 warns when a query is issued on a client that is still executing one (pg 9 refuses it);
  // the check's SELECT 1, a generation's epoch read and the stop's unlock used to overlap.
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on("warning", onWarning);
  const projection = uniqueName("p");
  const pool = createPool({ connectionString: db.url, max: 1, applicationName: `${projection}:lock` });
  const abort = new AbortController();
  const session = new ProjectionLockSession({
    pool,
    projection,
    retry: { initialMs: 50, maxMs: 200 },
    signal: abort.signal,
    onMustStop: () => undefined,
    log: createLogger("silent"),
    checkIntervalMs: 1,
  });
  try {
    await session.take();
    const serial = session.heldSession()!;
    for (let round = 0; round < 50; round++) {
      const reads = await Promise.all([1, 2, 3].map(() => session.readRebuildEpoch(serial)));
      expect(reads.map((read) => read.kind)).toEqual(["read", "read", "read"]);
    }
    await Promise.all([session.readRebuildEpoch(serial), session.release()]);
    // process.emitWarning is delivered on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((message) => message.includes("already executing a query"))).toEqual([]);
  } finally {
    process.off("warning", onWarning);
    abort.abort();
    await session.release();
    await pool.end();
  }
});

it("a plain key whose latest rebuilds row is a conversion's: the read throws CONFIG_INVALID and tells the member to stop, once", async () => {
  const projection = uniqueName("p");
  const pool = createPool({ connectionString: db.url, max: 1, applicationName: `${projection}:lock` });
  const abort = new AbortController();
  const mustStop: Error[] = [];
  const session = new ProjectionLockSession({
    pool,
    projection,
    retry: { initialMs: 50, maxMs: 200 },
    signal: abort.signal,
    onMustStop: (error) => mustStop.push(error),
    log: createLogger("silent"),
  });
  try {
    await session.take();
    const serial = session.heldSession()!;
    // A rebuild's row: an epoch like any other.
    await db.pool.query(
      `INSERT INTO replayable.rebuilds (projection, group_id, os_user, host, offsets) VALUES ($1, 'g', 'test', 'test', '{}')`,
      [projection],
    );
    expect(await session.readRebuildEpoch(serial)).toMatchObject({ kind: "read" });
    // The row `migrate --convert-to-versioned` writes for the plain key after moving its state.
    await db.pool.query(
      `INSERT INTO replayable.rebuilds (projection, group_id, os_user, host, offsets)
       VALUES ($1, 'g', 'test', 'test', jsonb_build_object('convertedTo', $1 || '@v1'))`,
      [projection],
    );
    for (let i = 0; i < 2; i++) {
      const error = await session.readRebuildEpoch(serial).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: "CONFIG_INVALID" });
      expect((error as Error).message).toContain(`projection ${projection} was converted to versioned`);
    }
    expect(mustStop).toHaveLength(1);
    expect(mustStop[0]).toMatchObject({
      code: "CONFIG_INVALID",
      context: { convertedTo: `${projection}@v1` },
    });
    expect(session.heldSession()).toBe(serial);
  } finally {
    abort.abort();
    await session.release();
    await pool.end();
  }
});
