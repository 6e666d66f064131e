/** Helpers for the replay, rebuild and prune tests: run a member until it has read what we expect. */
import { expect } from "vitest";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { ledgerChecksum, type LedgerState } from "../../src/projections/ledger/checksum.js";
import type { LedgerStream } from "../../src/projections/ledger/generate.js";
import { runCli, scrapeMetric, startCli } from "./process.js";
import { waitFor, waitForCaughtUp } from "./stack.js";

/** The checksum of applying several streams (disjoint event ids and orders) once each. */
export function combinedChecksum(...streams: readonly LedgerStream[]): string {
  const balances = new Map<string, bigint>();
  const orders = new Map<string, "paid" | "shipped">();
  for (const { expected } of streams) {
    for (const [account, balance] of expected.balances)
      balances.set(account, (balances.get(account) ?? 0n) + balance);
    for (const [order, state] of expected.orders) orders.set(order, state);
  }
  const state: LedgerState = { balances, orders };
  return ledgerChecksum(state);
}

/** `run` arguments of the ledger projection against `databaseUrl`. */
export function runArgs(databaseUrl: string, topic: string, group: string): string[] {
  return [
    "run",
    "--projection",
    "ledger",
    "--topic",
    topic,
    "--group",
    group,
    "--database-url",
    databaseUrl,
    "--no-migrate",
  ];
}

/** What one `run` did, from its /metrics. */
export interface RunCounts {
  readonly applied: number;
  readonly offsetDuplicates: number;
  readonly eventIdDuplicates: number;
}

/**
 * Runs a member until it has handled `expectedRecords` records (applied + duplicates + dead
 * letters, from /metrics) and committed the high watermark, then stops it with SIGTERM
 * (expecting exit 0) and returns its counts.
 */
export async function runUntilRead(
  admin: ClusterAdmin,
  databaseUrl: string,
  topic: string,
  group: string,
  expectedRecords: number,
): Promise<RunCounts> {
  const run = startCli(runArgs(databaseUrl, topic, group));
  try {
    const port = await run.metricsPort();
    const read = async () =>
      (await scrapeMetric(port, "replayable_records_applied_total", { topic })) +
      (await scrapeMetric(port, "replayable_duplicates_total", { topic })) +
      (await scrapeMetric(port, "replayable_records_dead_lettered_total", { topic }));
    await waitFor(`the member to read ${expectedRecords} records`, async () =>
      (await read()) >= expectedRecords ? true : undefined,
    );
    await waitForCaughtUp(admin, group, topic);
    return {
      applied: await scrapeMetric(port, "replayable_records_applied_total", { topic }),
      offsetDuplicates: await scrapeMetric(port, "replayable_duplicates_total", { topic, key: "offset" }),
      eventIdDuplicates: await scrapeMetric(port, "replayable_duplicates_total", { topic, key: "event_id" }),
    };
  } finally {
    run.child.kill("SIGTERM");
    const exit = await run.exited;
    expect(exit, run.stderr()).toEqual({ code: 0, signal: null });
  }
}

/** Runs a CLI command that must succeed and prints JSON (`--output json`); returns the parsed JSON. */
export async function cliJson<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
  const result = await runCli([...args, "--output", "json"]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

/** The group's committed offsets of `topic`, partition → offset. */
export async function committedOf(
  admin: ClusterAdmin,
  group: string,
  topic: string,
): Promise<Record<number, string>> {
  const rows = await admin.committedOffsets(group, [topic]);
  return Object.fromEntries(rows.map((r) => [r.partition, r.offset]));
}
