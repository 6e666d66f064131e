/**
 * Where PostgreSQL spends the cost of event-id dedupe, in isolation (docs/benchmarks.md "Event-id
 * dedupe: where PostgreSQL spends it"). Creates a scratch database, migrates it, and runs, on one
 * connection, transactions of `--batch` fresh ledger records (CloudEvents `ce_id` ids as
 * generateLedgerStream makes them) for each variant of the event-id table and statement, reading
 * the backend's CPU time from /proc/<pid>/stat (PostgreSQL must run on this machine) and the WAL
 * each statement wrote from EXPLAIN (ANALYZE, WAL) of a few more batches. It also measures the
 * offset-dedupe transaction (checkpoint lock, the ledger's set-based statements, checkpoint advance,
 * COMMIT) on the same records, the yardstick of the 1.3 × target.
 *
 *   npx tsx bench/eventIdCost.ts [--batches 40] [--batch 2000] [--rounds 3] [--only today,shipped]
 *
 * Prints one row per variant: PG CPU µs per id (median of the rounds), WAL bytes per id.
 */
import { readFileSync } from "node:fs";
import { hash } from "node:crypto";
import { Command } from "commander";
import pg from "pg";
import pino from "pino";
import { connectionConfig, createPool, drizzleOf } from "../src/db/pool.js";
import { migrate } from "../src/db/migrate.js";
import { exampleProjections } from "../src/projections/registry.js";
import { generateLedgerStream } from "../src/projections/ledger/generate.js";
import { ledgerProjection } from "../src/projections/ledger/ledgerProjection.js";
import type { LedgerEvent } from "../src/projections/ledger/events.js";
import type { DecodedRecord } from "../src/projection.js";
import type { KafkaRecord } from "../src/record.js";
import { insertEventIds, type EventIdRow } from "../src/sql/insertEventIds.js";
import { lockCheckpoint } from "../src/sql/lockCheckpoint.js";
import { advanceCheckpoint } from "../src/sql/advanceCheckpoint.js";
import { formatTable } from "../src/text/textTable.js";
import { VARIANTS, type Batch, type Variant } from "./eventIdVariants.js";

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ). */
const TICKS_PER_SECOND = 100;
const TOPIC = "bench-ledger-eventid";
const PARTITIONS = 6;

/** CPU time of process `pid` so far, ms (proc(5): utime + stime, fields 14 and 15). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** `count` batches of fresh ledger records with their event ids, offsets ascending per partition. */
function makeBatches(count: number, size: number, resent: number): Batch[] {
  const stream = generateLedgerStream({ count: count * size, duplicateRate: 0, seed: 1 });
  const next = new Array<bigint>(PARTITIONS).fill(0n);
  const batches: Batch[] = [];
  for (let b = 0; b < count; b++) {
    const partition = b % PARTITIONS;
    const rows: EventIdRow[] = [];
    const records: DecodedRecord<LedgerEvent>[] = [];
    for (const out of stream.records.slice(b * size, (b + 1) * size)) {
      const offset = String(next[partition]!);
      next[partition]! += 1n;
      const value = Buffer.from(out.value);
      const record: KafkaRecord = {
        topic: TOPIC,
        partition,
        offset,
        timestamp: String(Date.UTC(2026, 0, 1)),
        key: Buffer.from(out.key),
        value,
        headers: Object.fromEntries(Object.entries(out.headers).map(([k, v]) => [k, [Buffer.from(v)]])),
      };
      rows.push({ eventId: out.headers.ce_id!, offset, valueSha256: hash("sha256", value, "hex") });
      records.push({ record, value: ledgerProjection.decode(record), eventId: out.headers.ce_id });
    }
    // Re-sends of ids the batch before recorded (a new offset, the same value), ledger records untouched.
    const before = batches[batches.length - 1];
    const again = before === undefined ? [] : before.rows.slice(0, Math.round(resent * size));
    for (const r of again) {
      const offset = String(next[partition]!);
      next[partition]! += 1n;
      rows.push({ ...r, offset });
    }
    batches.push({
      partition,
      rows,
      records,
      lastOffset: String(next[partition]! - 1n),
      resent: again.length,
    });
  }
  return batches;
}

/** The offset-dedupe transaction's statements (inside BEGIN): what every variant adds to. */
async function ledgerTransaction(client: pg.PoolClient, batch: Batch): Promise<void> {
  await lockCheckpoint(client, "ledger", TOPIC, batch.partition);
  const ctx = { client, db: drizzleOf(client), log: pino({ level: "silent" }) };
  await ledgerProjection.applyBatch!(ctx, batch.records);
  await advanceCheckpoint(client, "ledger", TOPIC, batch.partition, String(BigInt(batch.lastOffset) + 1n));
}

/** Runs `batch` in one transaction; returns the backend's CPU ms for it. */
async function timed(
  client: pg.PoolClient,
  pid: number,
  batch: Batch,
  body: (batch: Batch) => Promise<void>,
) {
  const before = cpuMs(pid);
  await client.query("BEGIN");
  await body(batch);
  await client.query("COMMIT");
  return cpuMs(pid) - before;
}

/** Records `batch`'s ids the way `v` does (inside the caller's transaction). */
async function runVariant(client: pg.PoolClient, v: Variant, batch: Batch): Promise<void> {
  if (v.run !== undefined) return v.run(client, batch, TOPIC);
  const { text, values, check } = v.statement(batch, TOPIC);
  if (v.savepoint) await client.query("SAVEPOINT replayable_event_ids");
  const r = await client.query({ name: `v_${v.name}`, text, values });
  if (v.savepoint) await client.query("RELEASE SAVEPOINT replayable_event_ids");
  await check?.(client, batch, r);
}

/** WAL bytes and full-page images per id of `variant`'s statement, from EXPLAIN (ANALYZE, WAL). */
async function walPerId(client: pg.PoolClient, variant: Variant, batches: readonly Batch[]) {
  let bytes = 0;
  let fpi = 0;
  let ids = 0;
  for (const batch of batches) {
    const { text, values } = variant.statement(batch, TOPIC);
    await client.query("BEGIN");
    const r = await client.query<{ "QUERY PLAN": unknown }>(
      `EXPLAIN (ANALYZE, WAL, TIMING OFF, FORMAT JSON) ${text}`,
      values,
    );
    await client.query("COMMIT");
    const plan = (r.rows[0]!["QUERY PLAN"] as [{ Plan: PlanNode }])[0].Plan;
    const top = maxWal(plan);
    bytes += top.bytes;
    fpi += top.fpi;
    ids += batch.rows.length;
  }
  return { bytes: bytes / ids, fpi: fpi / ids };
}

interface PlanNode {
  readonly "WAL Bytes"?: number;
  readonly "WAL FPI"?: number;
  readonly Plans?: readonly PlanNode[];
}

/** The node that wrote the most WAL (the ModifyTable; a node's counters include its children's). */
function maxWal(node: PlanNode): { bytes: number; fpi: number } {
  let best = { bytes: node["WAL Bytes"] ?? 0, fpi: node["WAL FPI"] ?? 0 };
  for (const child of node.Plans ?? []) {
    const c = maxWal(child);
    if (c.bytes > best.bytes) best = c;
  }
  return best;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const opts = new Command()
    .option("--batches <n>", "timed batches per variant and round", "40")
    .option("--batch <n>", "records per batch", "2000")
    .option("--rounds <n>", "rounds (each runs every variant once, on a table that keeps growing)", "3")
    .option("--wal-batches <n>", "extra batches per variant under EXPLAIN (ANALYZE, WAL)", "3")
    .option("--only <list>", "comma-separated variant names")
    .option(
      "--resent <fraction>",
      "ids per batch that re-send one of the batch before (plain INSERT variants then fail)",
      "0",
    )
    .option("--keep", "keep the scratch database")
    .parse()
    .opts<{
      batches: string;
      batch: string;
      rounds: string;
      walBatches: string;
      only?: string;
      keep?: boolean;
      resent: string;
    }>();
  const [batches, size, rounds, walBatches] = [opts.batches, opts.batch, opts.rounds, opts.walBatches].map(
    Number,
  ) as [number, number, number, number];
  const variants =
    opts.only === undefined ? VARIANTS : VARIANTS.filter((v) => opts.only!.split(",").includes(v.name));
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const name = `bench_eventid_${process.pid}`;
  const admin = new pg.Client(connectionConfig(adminUrl));
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = createPool({ connectionString: url.toString(), max: 1 });
  try {
    await migrate(pool, exampleProjections());
    const client = await pool.connect();
    try {
      const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      await client.query("CREATE SCHEMA eventid_cost");
      for (const v of variants) for (const ddl of v.setup) await client.query(ddl);
      const all = makeBatches((batches + walBatches) * rounds + 1, size, Number(opts.resent));
      await warmUp(client, variants, all[all.length - 1]!);
      // Every variant runs each batch in turn (into its own table), so that the load of a shared
      // machine falls on all of them alike.
      const ledger = "offset dedupe (ledger transaction)";
      const cpu = new Map<string, number[]>([ledger, ...variants.map((v) => v.name)].map((n) => [n, []]));
      for (let round = 0; round < rounds; round++) {
        const set = all.slice(round * batches, (round + 1) * batches);
        const sums = new Map<string, number>();
        const add = (n: string, ms: number) => sums.set(n, (sums.get(n) ?? 0) + ms);
        for (const batch of set) {
          add(ledger, await timed(client, pid, batch, (b) => ledgerTransaction(client, b)));
          for (const v of variants)
            add(v.name, await timed(client, pid, batch, (b) => runVariant(client, v, b)));
        }
        for (const [n, ms] of sums) cpu.get(n)!.push((1000 * ms) / (set.length * size));
      }
      const walSet = all.slice(rounds * batches, rounds * batches + walBatches);
      const rows: string[][] = [];
      rows.push([
        "offset dedupe (ledger transaction)",
        fmt(median(cpu.get("offset dedupe (ledger transaction)")!)),
        "",
        "",
        "",
      ]);
      for (const v of variants) {
        const wal = v.run === undefined ? await walPerId(client, v, walSet) : { bytes: NaN, fpi: NaN };
        const us = median(cpu.get(v.name)!);
        rows.push([v.name, fmt(us), wal.bytes.toFixed(0), wal.fpi.toFixed(3), v.what]);
      }
      console.log(
        `${rounds} rounds × ${batches} batches × ${size} ids; PG CPU µs per id (median of rounds: ${[
          ...cpu.values(),
        ]
          .map((xs) => xs.map(fmt).join("/"))
          .join(" ")})`,
      );
      console.log(
        formatTable([["variant", "PG CPU µs/id", "WAL B/id", "FPI/id", "what"], ...rows]).join("\n"),
      );
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
    if (opts.keep !== true) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** One batch per variant into a scratch copy, so the first timed batch is not the one that plans. */
async function warmUp(client: pg.PoolClient, variants: readonly Variant[], batch: Batch): Promise<void> {
  for (const v of variants.filter((x) => x.run === undefined)) {
    const { text, values } = v.statement(batch, TOPIC);
    await client.query("BEGIN");
    await client.query({ name: `v_${v.name}`, text, values });
    await client.query("ROLLBACK");
  }
  await client.query("BEGIN");
  await ledgerTransaction(client, batch);
  await insertEventIds(client, "warm", TOPIC, batch.partition, batch.rows);
  await client.query("ROLLBACK");
}

function fmt(us: number): string {
  return us.toFixed(2);
}

await main();
