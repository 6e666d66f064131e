/**
 * CPU time PostgreSQL spends for a scenario: the server processes of the scenario's database
 * (its client backends and autovacuum workers) are listed from pg_stat_activity and their CPU
 * time read from /proc/<pid>/stat (proc(5): utime and stime, fields 14 and 15, in clock ticks).
 * Works only when PostgreSQL runs on this machine; otherwise the total stays undefined.
 */
import pg from "pg";
import { connectionConfig } from "../src/db/pool.js";
import { cpuTicks, TICKS_PER_SECOND } from "./processCpu.js";

/** Samples the CPU time of a database's server processes until stopped; keeps each process's last value. */
export class PostgresCpuSampler {
  private readonly ticks = new Map<number, number>();
  private readonly client: pg.Client;
  private timer: NodeJS.Timeout | undefined;
  private readable = true;
  private sampling: Promise<void> = Promise.resolve();

  constructor(
    databaseUrl: string,
    private readonly intervalMs = 250,
  ) {
    this.client = new pg.Client({
      ...connectionConfig(databaseUrl),
      application_name: "replayable-bench-cpu",
    });
  }

  /** Connects and starts sampling. */
  async start(): Promise<void> {
    await this.client.connect();
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample()).catch(() => undefined);
    }, this.intervalMs);
    this.timer.unref();
  }

  /**
   * Takes a last sample, disconnects and returns the CPU time of the processes seen, ms
   * (undefined when /proc/<pid>/stat of PostgreSQL's processes could not be read).
   */
  async stop(): Promise<number | undefined> {
    clearInterval(this.timer);
    await this.sampling;
    await this.sample().catch(() => undefined);
    await this.client.end().catch(() => undefined);
    if (!this.readable) return undefined;
    let total = 0;
    for (const t of this.ticks.values()) total += t;
    return (total * 1000) / TICKS_PER_SECOND;
  }

  private async sample(): Promise<void> {
    const r = await this.client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    for (const { pid } of r.rows) {
      const ticks = cpuTicks(pid);
      if (ticks === undefined) {
        // Gone meanwhile, or PostgreSQL runs elsewhere: /proc has no such process.
        if (this.ticks.size === 0) this.readable = false;
        continue;
      }
      this.readable = true;
      if (ticks > (this.ticks.get(pid) ?? 0)) this.ticks.set(pid, ticks);
    }
  }
}
