/**
 * The projection's rebuild epoch as read for one consumer group generation (docs/design.md "The
 * rebuild epoch"). The member starts reading it when the feed reports the assignment, before any
 * transaction of the generation runs; every transaction of the generation waits for it and carries
 * it, and the applying transaction refuses a batch when the database's epoch is newer.
 */

/** Reads the projection's rebuild epoch (a decimal string) from PostgreSQL. */
export type RebuildEpochReader = () => Promise<string>;

/** One generation's rebuild epoch: read once, read again after a failed read. */
export class GenerationEpoch {
  private pending: Promise<string> | undefined;

  /** Starts reading at once. */
  constructor(private readonly read: RebuildEpochReader) {
    this.pending = this.start();
  }

  /**
   * The epoch. A failed read rejects its waiters (the transaction counts as failed, and the retry
   * policy waits) and the next call reads again.
   */
  value(): Promise<string> {
    this.pending ??= this.start();
    return this.pending;
  }

  private start(): Promise<string> {
    const reading = this.read();
    reading.catch(() => {
      if (this.pending === reading) this.pending = undefined;
    });
    return reading;
  }
}
