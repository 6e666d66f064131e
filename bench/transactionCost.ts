/**
 * Where PostgreSQL spends a dedupe-then-effect transaction, per statement, without Kafka
 * (docs/benchmarks.md "Event ids at 24 partitions"). Creates a scratch database, migrates it, and
 * runs the engine's own transaction (`applyBatch` with the ledger, event-id or offset dedupe) on
 * batches of `--batch` fresh ledger records padded to `--value-bytes`, spread over `--partitions`
 * partitions, from `--connections` connections at once. Around every statement it reads the
 * backend's CPU time from /proc/<pid>/schedstat (nanoseconds; PostgreSQL must run on this machine),
 * so the other databases on a shared server do not count.
 *
 *   npx tsx bench/transactionCost.ts [--batch 160] [--batches 150] [--partitions 24] [--connections 8]
 *     [--value-bytes 700] [--duplicate-rate 0.01] [--warmup 48] [--dedupe event-id,offset] [--keep]
 *
 * Prints, per dedupe kind, PostgreSQL CPU µs per record and per transaction, split by statement.
 */
import { readFileSync } from "node:fs";
import { Command } from "commander";
import pg from "pg";
import pino from "pino";
import { connectionConfig, createPool } from "../src/db/pool.js";
import { migrate } from "../src/db/migrate.js";
import { applyBatch } from "../src/engine/applyBatch.js";
import { exampleProjections } from "../src/projections/registry.js";
import { generateLedgerStream } from "../src/projections/ledger/generate.js";
import { ledgerProjection } from "../src/projections/ledger/ledgerProjection.js";
import type { LedgerEvent } from "../src/projections/ledger/events.js";
import type { Projection } from "../src/projection.js";
import type { KafkaRecord } from "../src/record.js";
import { formatTable } from "../src/text/textTable.js";

const TOPIC = "bench-ledger-txcost";

/** CPU time of process `pid` so far, ns (/proc/<pid>/schedstat, first field: time on a CPU). */
function cpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
}

/** Per statement label: CPU ns and calls. */
type Tally = Map<string, { ns: number; calls: number }>;

/** Wraps `client.query` so that each statement's backend CPU lands in `tally` under its name or text. */
function instrument(client: pg.PoolClient, pid: number, tally: Tally, counting: () => boolean): void {
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  (client as unknown as { query: unknown }).query = async (...args: unknown[]) => {
    const first = args[0] as string | { name?: string; text: string };
    const label = typeof first === "string" ? first.slice(0, 40) : (first.name ?? first.text.slice(0, 40));
    const before = cpuNs(pid);
    try {
      return await query(...args);
    } finally {
      if (counting()) {
        const t = tally.get(label) ?? { ns: 0, calls: 0 };
        t.ns += cpuNs(pid) - before;
        t.calls += 1;
        tally.set(label, t);
      }
    }
  };
}

/**
 * `count` batches of about `size` fresh records: each record goes to the partition of its key (as a
 * keyed producer sends it, so an account's records stay on one partition), each partition's records
 * are cut into batches in offset order, and the batches go round the partitions.
 */
function makeBatches(
  count: number,
  size: number,
  partitions: number,
  valueBytes: number,
  duplicateRate: number,
): KafkaRecord[][] {
  const stream = generateLedgerStream({ count: count * size, duplicateRate, seed: 1, valueBytes });
  const byPartition: KafkaRecord[][] = Array.from({ length: partitions }, () => []);
  for (const out of stream.records) {
    const partition = keyPartition(out.key, partitions);
    const records = byPartition[partition]!;
    records.push({
      topic: TOPIC,
      partition,
      offset: String(records.length),
      timestamp: String(Date.UTC(2026, 0, 1)),
      key: Buffer.from(out.key),
      value: Buffer.from(out.value),
      headers: Object.fromEntries(Object.entries(out.headers).map(([k, v]) => [k, [Buffer.from(v)]])),
    });
  }
  const batches: KafkaRecord[][] = [];
  for (let start = 0; batches.length < count && byPartition.some((r) => r.length > start); start += size)
    for (const records of byPartition)
      if (records.length > start) batches.push(records.slice(start, start + size));
  return batches;
}

/** A partition for `key` (FNV-1a): the same key always on the same partition. */
function keyPartition(key: string, partitions: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return h % partitions;
}

async function run(
  pool: pg.Pool,
  projection: Projection<LedgerEvent>,
  batches: KafkaRecord[][],
  connections: number,
  warmup: number,
): Promise<{
  tally: Tally;
  records: number;
  transactions: number;
  retries: Map<string, number>;
  plans: Map<string, { generic: number; custom: number }>;
}> {
  const tally: Tally = new Map();
  const retries = new Map<string, number>();
  const plans = new Map<string, { generic: number; custom: number }>();
  const log = pino({ level: "silent" });
  let nextBatch = 0;
  let records = 0;
  let transactions = 0;
  const worker = async () => {
    const client = await pool.connect();
    try {
      const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      let counted = false;
      instrument(client, pid, tally, () => counted);
      for (let b = nextBatch++; b < batches.length; b = nextBatch++) {
        const batch = batches[b]!;
        counted = b >= warmup;
        for (;;) {
          try {
            await applyBatch({
              client,
              projection,
              topic: TOPIC,
              partition: batch[0]!.partition,
              records: batch,
              maxRecordBytes: 1 << 20,
              rebuildEpoch: "0",
              log,
            });
            break;
          } catch (error) {
            // Deadlock or serialization failure: retried, as the engine does.
            const code = (error as { code?: string }).code;
            if (code !== "40P01" && code !== "40001") throw error;
            retries.set(code, (retries.get(code) ?? 0) + 1);
          }
        }
        if (!counted) continue;
        records += batch.length;
        transactions += 1;
      }
      counted = false;
      const prepared = await client.query<{ name: string; generic_plans: string; custom_plans: string }>(
        "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements",
      );
      for (const r of prepared.rows) {
        const p = plans.get(r.name) ?? { generic: 0, custom: 0 };
        p.generic += Number(r.generic_plans);
        p.custom += Number(r.custom_plans);
        plans.set(r.name, p);
      }
    } finally {
      client.release();
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { tally, records, transactions, retries, plans };
}

async function main(): Promise<void> {
  const opts = new Command()
    .option("--batch <n>", "records per transaction", "160")
    .option("--batches <n>", "transactions per dedupe kind", "150")
    .option("--partitions <n>", "partitions the batches go round", "24")
    .option("--connections <n>", "transactions at once", "8")
    .option("--value-bytes <n>", "bytes of each JSON value", "700")
    .option("--warmup <n>", "transactions first run and not counted (plans, caches, first touches)", "48")
    .option("--duplicate-rate <r>", "fraction of re-sent records (as make bench: 0.01)", "0.01")
    .option("--keep", "keep the scratch databases")
    .option("--dedupe <list>", "event-id, offset, or both", "event-id,offset")
    .parse()
    .opts<{
      duplicateRate: string;
      keep?: boolean;
      warmup: string;
      batch: string;
      batches: string;
      partitions: string;
      connections: string;
      valueBytes: string;
      dedupe: string;
    }>();
  const [size, count, partitions, connections, valueBytes] = [
    opts.batch,
    opts.batches,
    opts.partitions,
    opts.connections,
    opts.valueBytes,
  ].map(Number) as [number, number, number, number, number];
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const admin = new pg.Client(connectionConfig(adminUrl));
  await admin.connect();
  try {
    for (const kind of opts.dedupe.split(",")) {
      const name = `bench_txcost_${process.pid}_${kind.replace("-", "")}`;
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      const pool = createPool({ connectionString: url.toString(), max: connections });
      try {
        await migrate(pool, exampleProjections());
        const projection: Projection<LedgerEvent> =
          kind === "offset" ? { ...ledgerProjection, dedupe: { kind: "offset" } } : ledgerProjection;
        // A warm-up round on other partitions' offsets would differ; the first batches plan the statements.
        const batches = makeBatches(
          count + Number(opts.warmup),
          size,
          partitions,
          valueBytes,
          Number(opts.duplicateRate),
        );
        const { tally, records, transactions, retries, plans } = await run(
          pool,
          projection,
          batches,
          connections,
          Number(opts.warmup),
        );
        let total = 0;
        for (const t of tally.values()) total += t.ns;
        const rows = [...tally]
          .sort((a, b) => b[1].ns - a[1].ns)
          .map(([label, t]) => [
            label,
            plans.has(label) ? `${plans.get(label)!.generic}/${plans.get(label)!.custom}` : "",
            String(t.calls),
            (t.ns / 1000 / records).toFixed(2),
            (t.ns / 1000 / transactions).toFixed(0),
            (t.ns / 1000 / t.calls).toFixed(0),
          ]);
        console.log(
          `${kind}: ${transactions} transactions × ${size} records, ${partitions} partitions, ${connections} at once, ${valueBytes}-byte values: PG CPU ${(total / 1000 / records).toFixed(2)} µs/record, ${(total / 1000 / transactions).toFixed(0)} µs/transaction; retried: ${JSON.stringify(Object.fromEntries(retries))}`,
        );
        console.log(
          formatTable([
            ["statement", "generic/custom plans", "calls", "µs/record", "µs/transaction", "µs/call"],
            ...rows,
          ]).join("\n"),
        );
      } finally {
        await pool.end();
        if (opts.keep === true) console.log(`kept database ${name}`);
        else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    }
  } finally {
    await admin.end();
  }
}

await main();
