/**
 * Keeps `replayable_event_ids{projection}` fresh cheaply: one count(*) at start and then every
 * `intervalMs` (an index-only scan of the primary key), and between counts the rows this member's
 * transactions inserted are added. Other members' inserts and pruning show at the next count; a
 * batch committing while a periodic count runs may be counted twice until the next count.
 */
import type pg from "pg";
import type { Logger } from "pino";
import type { Metrics } from "../metrics/metrics.js";
import { countEventIds } from "../sql/countEventIds.js";

import type { MemberEvents } from "./memberEvents.js";
/** Options for {@link EventIdGauge}. */
export interface EventIdGaugeOptions {
  readonly metrics: Metrics;
  readonly pool: pg.Pool;
  readonly projection: string;
  /** Period between exact counts, ms; default 60000. */
  readonly intervalMs?: number;
  readonly log: Logger;
}

/** The event-id row gauge of one projection. `start()` and `stop()` are idempotent. */
export class EventIdGauge {
  private rows: bigint | undefined;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: EventIdGaugeOptions) {}

  /**
   * Counts once now, then every interval. Resolves when the first count is done (it never
   * rejects: a failure is logged and retried at the next interval), so a caller that awaits it
   * before consuming starts from an exact value.
   */
  start(): Promise<void> {
    if (this.timer !== undefined || this.stopped) return Promise.resolve();
    this.timer = setInterval(() => void this.count(), this.options.intervalMs ?? 60_000);
    this.timer.unref();
    return this.count();
  }

  /** Stops counting and waits for a count in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.inFlight;
  }

  /** Follows the member's committed transactions ({@link recorded}). */
  observe(events: MemberEvents): void {
    events.on("batchCommitted", (event) => this.recorded(event.result.eventIdsRecorded));
  }

  /** Adds the rows one committed transaction inserted (BatchResult.eventIdsRecorded). */
  recorded(rows: number): void {
    if (rows === 0 || this.rows === undefined) return;
    this.rows += BigInt(rows);
    this.publish();
  }

  /** Counts the rows now (concurrent calls share one query); a failure is logged and retried next time. */
  count(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.inFlight ??= (async () => {
      try {
        this.rows = await countEventIds(this.options.pool, this.options.projection);
        this.publish();
      } catch (error) {
        this.options.log.debug(
          { err: error },
          "counting event-id rows failed; retrying at the next interval",
        );
      } finally {
        this.inFlight = undefined;
      }
    })();
    return this.inFlight;
  }

  private publish(): void {
    if (this.rows === undefined) return;
    this.options.metrics.eventIds.set({ projection: this.options.projection }, Number(this.rows));
  }
}
