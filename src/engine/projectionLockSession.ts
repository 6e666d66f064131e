/**
 * The projection's shared advisory lock, held by a running member for its lifetime on a
 * connection of its own (its own one-connection pool, so the main pool's REPLAYABLE_DB_POOL_SIZE
 * connections all serve transactions). `rebuild` takes the exclusive form, so it cannot start while
 * a member runs, and a member cannot start during a rebuild. If the connection dies (PostgreSQL
 * restarted), the lock is taken again in the background once PostgreSQL answers; a rebuild cannot
 * start meanwhile, as it also needs the consumer group inactive.
 *
 * The session is idle between uses, and a connection that went silent (half-open: a failover that
 * moved the address, a NAT dropping the flow) shows nothing to an idle client: TCP keepalive
 * probes may be answered by a middlebox or take many minutes. So the session is checked with
 * `SELECT 1` every {@link ProjectionLockSessionOptions.checkIntervalMs}; the pool's query timeout
 * (REPLAYABLE_DB_QUERY_TIMEOUT_MS) is its deadline, and a failed check counts as the session lost:
 * its connection is destroyed and the lock taken again. The lock is lost from view within the
 * interval plus the query timeout (70 s at the defaults). The check also keeps the session from
 * being idle longer than the interval, so an `idle_session_timeout` above it never ends it.
 *
 * Each session taken has a serial number, and each consumer group generation's rebuild epoch is
 * read on the session held when the generation began ({@link ProjectionLockSession.readRebuildEpoch}):
 * an answer on that session proves that the shared lock was held, and so that no rebuild ran,
 * from the join through the read (docs/design.md "The rebuild epoch").
 */
import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import type { Logger } from "pino";
import { backoffDelayMs } from "../support/backoff.js";
import { ReplayableError, classifyPgError, errorMessage } from "../errors.js";
import { advisoryUnlock, projectionLock, tryAdvisoryLock } from "../sql/advisoryLocks.js";
import { failpoint } from "../support/failpoints.js";
import { KEEPALIVE_INITIAL_DELAY_MS } from "../db/pool.js";
import { setServerKeepalives } from "../sql/setServerKeepalives.js";
import { readEpochAndCheckpoints } from "../sql/lockCheckpoint.js";
import type { EpochSession, SessionEpochRead } from "./generationEpoch.js";
import type { RetryTiming } from "./retryPolicy.js";

/**
 * A lost lock session within this long of the last one logged as a warning belongs to the same
 * outage and is logged at debug, ms.
 */
const LOCK_LOSS_QUIET_MS = 60_000;

/** {@link ProjectionLockSessionOptions.checkIntervalMs}'s default, ms. */
export const LOCK_CHECK_INTERVAL_MS = 10_000;

/** Options of {@link ProjectionLockSession}. */
export interface ProjectionLockSessionOptions {
  /** A pool of one connection, for the lock's session alone. */
  readonly pool: pg.Pool;
  readonly projection: string;
  /** Back-off of taking the lock again after its session was lost. */
  readonly retry: RetryTiming;
  /**
   * Idle time before the server's keepalive probes start on the lock's session, ms
   * (REPLAYABLE_DB_KEEPALIVE_MS); default {@link KEEPALIVE_INITIAL_DELAY_MS}. The server ends the
   * backend of a member whose connection died within this plus 15 s ({@link setServerKeepalives}),
   * so the shared lock of a dead member does not hold `replay --execute` and `rebuild --execute`
   * off for the server's TCP defaults (two hours on Linux).
   */
  readonly keepAliveMs?: number;
  /**
   * How often the held session is checked with `SELECT 1`, ms (REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS);
   * default {@link LOCK_CHECK_INTERVAL_MS}. The check's deadline is the pool's `query_timeout`.
   */
  readonly checkIntervalMs?: number;
  /** Aborted when the member stops: the lock is no longer taken again. */
  readonly signal: AbortSignal;
  /**
   * Called when the member must stop: the lock cannot be taken again because a rebuild holds it
   * (PROJECTION_LOCKED), or a generation's epoch read found the plain projection converted to a
   * versioned one (CONFIG_INVALID).
   */
  readonly onMustStop: (error: ReplayableError) => void;
  readonly log: Logger;
}

/** The projection's shared advisory lock of one member. */
export class ProjectionLockSession implements EpochSession {
  private client: pg.PoolClient | undefined;
  /** Sessions taken since start: the serial of the one held (or last held). */
  private serial = 0;
  /** Resolved when a session is taken ({@link whenHeld}). */
  private waiters: (() => void)[] = [];
  /** When the loss of the lock's session was last logged as a warning (epoch ms). */
  private lossWarnedAt: number | undefined;
  /** Lock sessions lost since start (each one taken again). */
  private sessionsLost = 0;
  /** The next health check of the held session. */
  private checkTimer: NodeJS.Timeout | undefined;
  /** Whether onMustStop was called for a converted projection. */
  private stopReported = false;

  /**
   * The session's statements run one at a time, in the order asked: the health check, a
   * generation's epoch read and the stop's unlock can be asked at once, and pg 8 warns on a query
   * issued while another runs on the same client (pg 9 refuses it). A statement that hangs holds
   * the ones behind it until the pool's query timeout fails it.
   */
  private statements: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ProjectionLockSessionOptions) {}

  /** Runs `statement` after every statement asked before it on this session has settled. */
  private inTurn<T>(statement: () => Promise<T>): Promise<T> {
    const result = this.statements.then(statement, statement);
    this.statements = result.catch(() => undefined);
    return result;
  }

  /**
   * Takes the shared lock on a connection kept until {@link release}.
   * @throws ReplayableError PROJECTION_LOCKED when a rebuild holds the lock.
   */
  async take(): Promise<void> {
    const { projection, pool, signal } = this.options;
    const client = await pool.connect();
    // A checked-out client whose connection dies emits "error": without a listener, the process crashes.
    client.on("error", (error: Error) => this.lost(client, error));
    let locked = false;
    try {
      await setServerKeepalives(client, this.options.keepAliveMs ?? KEEPALIVE_INITIAL_DELAY_MS);
      locked = await tryAdvisoryLock(client, projectionLock(projection), true);
    } catch (error) {
      client.release(true);
      throw error;
    }
    if (!locked) {
      client.release();
      throw new ReplayableError(
        "PROJECTION_LOCKED",
        `projection ${projection} is being rebuilt (another session holds its advisory lock); run again once \`replayable rebuild\` has finished`,
      );
    }
    if (signal.aborted) {
      // The member stopped while the lock was being taken: an unreleased client would hold pool.end().
      client.release();
      return;
    }
    this.client = client;
    this.serial += 1;
    this.scheduleCheck(client);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** {@inheritDoc EpochSession.heldSession} */
  heldSession(): number | undefined {
    return this.client === undefined ? undefined : this.serial;
  }

  /**
   * Reads the projection's rebuild epoch, and its checkpoints in the same statement, on session
   * `serial`. A PostgreSQL session is one backend on
   * one connection, and a session lock lasts until it is unlocked or the backend exits: an answer on
   * the connection taken as `serial` proves the shared lock was held from its taking through the
   * read, so no rebuild (which needs the exclusive lock) ran in between.
   * @returns `lost` when `serial` is not the session held now, or it was lost during the read.
   * @throws the query's error when the session is still held (e.g. a statement timeout).
   * @throws ReplayableError CONFIG_INVALID when the projection's key was converted to a version's
   *   (docs/design.md "The rebuild epoch"); the member is told to stop.
   */
  async readRebuildEpoch(serial: number): Promise<SessionEpochRead> {
    await failpoint("rebuild-epoch-read");
    const client = this.client;
    if (client === undefined || this.serial !== serial) return { kind: "lost" };
    try {
      const read = await this.inTurn(async () =>
        this.client === client ? await readEpochAndCheckpoints(client, this.options.projection) : undefined,
      );
      // The session was lost while statements ahead of the read ran.
      if (read === undefined) return { kind: "lost" };
      if (read.convertedTo !== undefined) throw this.converted(read.convertedTo);
      return { kind: "read", epoch: read.epoch, checkpoints: read.checkpoints };
    } catch (error) {
      if (error instanceof ReplayableError && error.code === "CONFIG_INVALID") throw error;
      if (this.client !== client) return { kind: "lost" };
      // The connection's own "error" event may come a moment later, or never (a query on a client
      // already ended): a connection failure loses the session now, and it is taken again.
      if (classifyPgError(error).reason === "connection") {
        this.lost(client, error instanceof Error ? error : new Error(errorMessage(error)));
        return { kind: "lost" };
      }
      throw error;
    }
  }

  /**
   * The error of a plain projection's key found converted to a version's (`migrate
   * --convert-to-versioned` ran while this member's lock session was lost, or the member's role
   * could not read the version registry when it started): the member must stop,
   * as a plain member started now would be refused (ConsumerService's start check). Reported to
   * {@link ProjectionLockSessionOptions.onMustStop} once.
   */
  private converted(convertedTo: string): ReplayableError {
    const { projection } = this.options;
    const error = new ReplayableError(
      "CONFIG_INVALID",
      `projection ${projection} was converted to versioned (\`replayable migrate --convert-to-versioned\`): its dedupe state is now version 1's (${convertedTo}), and this plain member would apply records beside it a second time (it ran while the conversion found its advisory lock free, its PostgreSQL session lost, or it started with a role that cannot read the version registry its start-up check reads). Stopped without applying more; run the versioned code (defineProjection({ versioned: true })) instead`,
      { context: { projection, convertedTo } },
    );
    if (!this.stopReported) {
      this.stopReported = true;
      this.options.onMustStop(error);
    }
    return error;
  }

  /** {@inheritDoc EpochSession.whenHeld} */
  whenHeld(signal: AbortSignal): Promise<boolean> {
    if (this.client !== undefined) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => resolve(false);
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      });
    });
  }

  /**
   * Unlocks explicitly, then returns the connection: PostgreSQL drops a session lock only when the
   * backend exits, a moment after the socket closes, and a `replay --execute` or `rebuild` right
   * after the stop would still find it held.
   */
  async release(): Promise<void> {
    const client = this.client;
    if (client === undefined) return;
    this.client = undefined;
    clearTimeout(this.checkTimer);
    await this.inTurn(() => advisoryUnlock(client, projectionLock(this.options.projection), true)).catch(
      () => undefined,
    );
    client.release();
  }

  /**
   * Checks the held session after the interval: `SELECT 1` within the pool's query timeout, else
   * the session is lost ({@link lost}).
   */
  private scheduleCheck(client: pg.PoolClient): void {
    clearTimeout(this.checkTimer);
    this.checkTimer = setTimeout(() => {
      if (this.client !== client) return;
      // Not on a client released or lost while statements ahead of the check ran.
      this.inTurn(async () => (this.client === client ? await client.query("SELECT 1") : undefined)).then(
        () => {
          if (this.client === client) this.scheduleCheck(client);
        },
        (error: unknown) => this.lost(client, error instanceof Error ? error : new Error(String(error))),
      );
    }, this.options.checkIntervalMs ?? LOCK_CHECK_INTERVAL_MS);
    // The member's other work keeps the process alive; a pending check must not.
    this.checkTimer.unref();
  }

  private lost(client: pg.PoolClient, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    clearTimeout(this.checkTimer);
    client.release(error);
    if (this.options.signal.aborted) return;
    // One warning per outage: a session lost again within LOCK_LOSS_QUIET_MS of the last warning
    // (PostgreSQL restarting, sessions terminated one after another) is the same outage.
    const now = Date.now();
    this.sessionsLost += 1;
    const log = this.options.log;
    if (this.lossWarnedAt === undefined || now - this.lossWarnedAt > LOCK_LOSS_QUIET_MS) {
      this.lossWarnedAt = now;
      log.warn(
        { err: error },
        "lost the PostgreSQL session holding the projection's shared advisory lock; taking it again",
      );
    } else {
      log.debug({ err: error, sessionsLost: this.sessionsLost }, "lost the advisory-lock session again");
    }
    void this.takeAgain();
  }

  /** Takes the lock again with back-off until it is held, the member stops, or a rebuild holds it. */
  private async takeAgain(): Promise<void> {
    const { retry, signal, log } = this.options;
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        await failpoint("lock-take-again");
        await this.take();
        log.info({ sessionsLost: this.sessionsLost }, "projection's shared advisory lock taken again");
        return;
      } catch (error) {
        if (error instanceof ReplayableError && error.code === "PROJECTION_LOCKED") {
          this.options.onMustStop(error);
          return;
        }
        const waited = await sleep(backoffDelayMs(attempt, retry.initialMs, retry.maxMs), true, {
          signal,
        }).catch(() => false);
        if (!waited) return;
      }
    }
  }
}
