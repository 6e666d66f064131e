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
 */
import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import type { Logger } from "pino";
import { backoffDelayMs } from "../backoff.js";
import { ReplayableError } from "../errors.js";
import { advisoryUnlock, projectionLock, tryAdvisoryLock } from "../sql/advisoryLocks.js";
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
   * How often the held session is checked with `SELECT 1`, ms (REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS);
   * default {@link LOCK_CHECK_INTERVAL_MS}. The check's deadline is the pool's `query_timeout`.
   */
  readonly checkIntervalMs?: number;
  /** Aborted when the member stops: the lock is no longer taken again. */
  readonly signal: AbortSignal;
  /** Called when the lock cannot be taken again because a rebuild holds it: the member must stop. */
  readonly onLockedOut: (error: ReplayableError) => void;
  readonly log: Logger;
}

/** The projection's shared advisory lock of one member. */
export class ProjectionLockSession {
  private client: pg.PoolClient | undefined;
  /** When the loss of the lock's session was last logged as a warning (epoch ms). */
  private lossWarnedAt: number | undefined;
  /** Lock sessions lost since start (each one taken again). */
  private sessionsLost = 0;
  /** The next health check of the held session. */
  private checkTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ProjectionLockSessionOptions) {}

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
    this.scheduleCheck(client);
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
    await advisoryUnlock(client, projectionLock(this.options.projection), true).catch(() => undefined);
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
      client.query("SELECT 1").then(
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
        await this.take();
        log.info({ sessionsLost: this.sessionsLost }, "projection's shared advisory lock taken again");
        return;
      } catch (error) {
        if (error instanceof ReplayableError && error.code === "PROJECTION_LOCKED") {
          this.options.onLockedOut(error);
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
