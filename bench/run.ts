/**
 * `make bench`: produce a ledger stream once, then measure five scenarios on the same topic, each
 * in a subprocess of its own with its own database and consumer group, check the targets and write
 * the results to bench/results/<time>.json. Exits 1 when a target or a correctness check is missed.
 * docs/benchmarks.md explains the scenarios, the targets and how to read the numbers.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Command } from "commander";
import pg from "pg";
import { loadConfig, redactUrl, type Config } from "../src/config.js";
import { planMemory } from "../src/engine/memoryPlan.js";
import { connectionConfig, createPool, drizzleOf } from "../src/db/pool.js";
import { migrate } from "../src/db/migrate.js";
import { exampleProjections } from "../src/projections/registry.js";
import { KafkaAdmin } from "../src/kafka/admin.js";
import { createKafka } from "../src/kafka/client.js";
import { produceRecords } from "../src/kafka/producer.js";
import { createLogger } from "../src/logger.js";
import { ledgerChecksum, readLedgerState } from "../src/projections/ledger/checksum.js";
import { generateLedgerStream, type OutgoingRecord } from "../src/projections/ledger/generate.js";
import {
  RESULT_MARKER,
  SCENARIOS,
  type ScenarioMeasurement,
  type ScenarioName,
  type ScenarioSpec,
} from "./scenario.js";
import { evaluateTargets, recordsPerSecond, type ScenarioState, type TargetResult } from "./targets.js";
import { formatTable, recordRows } from "../src/textTable.js";

interface Flags {
  count: string;
  naiveCount: string;
  partitions: string;
  duplicateRate: string;
  seed: string;
  only?: string;
  keep: boolean;
  topic?: string;
  cpuProf: boolean;
  timeout: string;
}

const LABELS: Record<ScenarioName, string> = {
  raw: "(1) raw KafkaJS, no-op eachBatch",
  "per-record": "(2) replayable, per-record apply",
  batch: "(3) replayable, batch apply",
  naive: "(4) naive: 1 transaction per record",
  replay: "(5) replay of (3), all duplicates",
};

const program = new Command("bench")
  .description("benchmark replayable against raw KafkaJS consumption on the local stack")
  .option("--count <n>", "ledger records to produce, duplicates included", "1000000")
  .option("--naive-count <n>", "records the naive scenario (4) consumes: a bounded prefix", "100000")
  .option("--partitions <n>", "partitions of the benchmark topic", "6")
  .option("--duplicate-rate <r>", "fraction of re-sent records", "0.01")
  .option("--seed <n>", "seed of the ledger stream", "1")
  .option("--only <list>", `comma-separated subset of ${SCENARIOS.join(",")}`)
  .option("--keep", "keep the topic and the databases afterwards", false)
  .option(
    "--topic <name>",
    "reuse this topic when it already holds the stream of the same --count, --seed and --duplicate-rate (e.g. kept by --keep); it is never deleted",
  )
  .option("--cpu-prof", "write a V8 CPU profile of each scenario to bench/results/profiles/", false)
  .option("--timeout <s>", "give up on a scenario after this many seconds", "3600");

function positiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${flag}: "${text}" is not a whole number >= 1`);
  return n;
}

async function main(): Promise<void> {
  const flags = program.parse().opts<Flags>();
  const count = positiveInt("--count", flags.count);
  const naiveCount = Math.min(positiveInt("--naive-count", flags.naiveCount), count);
  const partitions = positiveInt("--partitions", flags.partitions);
  const duplicateRate = Number(flags.duplicateRate);
  if (!(duplicateRate >= 0 && duplicateRate < 1))
    throw new Error(`--duplicate-rate: "${flags.duplicateRate}" must be a number in [0, 1)`);
  const only = flags.only?.split(",").map((s) => s.trim()) ?? [...SCENARIOS];
  for (const name of only)
    if (!SCENARIOS.includes(name as ScenarioName))
      throw new Error(`--only: "${name}" is not a scenario; use some of ${SCENARIOS.join(",")}`);
  if (only.includes("replay") && !only.includes("batch"))
    throw new Error("--only: replay re-reads what batch applied; list batch too");
  const timeoutMs = positiveInt("--timeout", flags.timeout) * 1000;

  const config = loadConfig(process.env);
  const log = createLogger(process.env.LOG_LEVEL ?? "warn", { bench: true });
  const run = randomBytes(4).toString("hex");
  const topic = flags.topic ?? `bench-ledger-${run}`;
  const resultsDir = join(import.meta.dirname, "results");
  mkdirSync(resultsDir, { recursive: true });
  const started = new Date();
  const loadBefore = loadavg();
  say(
    `bench ${run}: ${count} records, ${partitions} partitions, ${duplicateRate * 100}% duplicates; load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} cores`,
  );

  const child = compileScenarios();
  const kafka = createKafka({
    brokers: config.kafka.brokers,
    clientId: "replayable-bench",
    log,
    security: config.kafka.security,
  });
  const admin = await KafkaAdmin.connect(kafka);
  const databases: string[] = [];
  try {
    // Produce once; every scenario reads the same topic.
    const stream = generateLedgerStream({ count, duplicateRate, seed: positiveInt("--seed", flags.seed) });
    const produceStart = performance.now();
    if (await admin.createTopic(topic, partitions)) await produceRecords(kafka, topic, stream.records, 2000);
    const produceMs = performance.now() - produceStart;
    const expected = { events: stream.events, duplicates: stream.duplicates, checksum: stream.checksum };
    const ownFetchBytes = ownFetchBytesPerPartition(config, partitions, meanRecordBytes(stream.records));
    stream.records.length = 0;
    const offsets = await admin.topicOffsets(topic);
    const end = offsets.map((o) => o.highWatermark);
    const held = offsets.reduce((n, o) => n + BigInt(o.highWatermark) - BigInt(o.logStartOffset), 0n);
    if (held !== BigInt(count) || offsets.length !== partitions)
      throw new Error(
        `topic ${topic} holds ${held} records in ${offsets.length} partitions, not the ${count} in ${partitions} this run expects; give another --topic`,
      );
    say(
      `produced ${count} records (${expected.events} events, ${expected.duplicates} re-sent) to ${topic} in ${(produceMs / 1000).toFixed(1)} s`,
    );

    const states = new Map<ScenarioName, ScenarioState>();
    const groups = new Map<ScenarioName, { group: string; databaseUrl: string }>();
    for (const scenario of SCENARIOS) {
      if (!only.includes(scenario)) continue;
      let target: { group: string; databaseUrl: string };
      if (scenario === "replay") {
        // Reset (3)'s group to the earliest offsets and read everything again on (3)'s database.
        target = groups.get("batch")!;
        const offsets = await admin.topicOffsets(topic);
        await admin.setOffsets(
          target.group,
          topic,
          offsets.map((o) => ({ partition: o.partition, offset: o.logStartOffset })),
        );
      } else {
        const group = `bench-${scenario}-${run}`;
        const databaseUrl =
          scenario === "raw"
            ? ""
            : await createDatabase(
                config.databaseUrl,
                `bench_${run}_${scenario.replace("-", "_")}`,
                databases,
              );
        target = { group, databaseUrl };
      }
      groups.set(scenario, target);
      const spec: ScenarioSpec = {
        scenario,
        topic,
        group: target.group,
        brokers: config.kafka.brokers,
        databaseUrl: target.databaseUrl,
        end,
        limit: scenario === "naive" && naiveCount < count ? naiveCount : undefined,
        partitionsConsumedConcurrently: config.partitionsConsumedConcurrently,
        maxBytesPerPartition: ownFetchBytes,
      };
      say(
        `${LABELS[scenario]}: running${spec.limit === undefined ? "" : ` on the first ${spec.limit} records`} ...`,
      );
      const measurement = await runScenario(
        child,
        spec,
        flags.cpuProf ? join(resultsDir, "profiles") : undefined,
        timeoutMs,
      );
      const dedupe = target.databaseUrl === "" ? undefined : await dedupeState(target.databaseUrl, topic);
      states.set(scenario, { measurement, dedupe });
      say(
        `${LABELS[scenario]}: ${rate(measurement).toFixed(0)} records/s, p50 ${measurement.batchP50Ms.toFixed(1)} ms, p99 ${measurement.batchP99Ms.toFixed(1)} ms, peak RSS ${mb(measurement.peakRssBytes)} MB`,
      );
    }

    const targets = evaluateTargets({
      states,
      partitions,
      expected,
      count,
      naiveLimited: naiveCount < count,
    });
    const loadAfter = loadavg();
    const rows = SCENARIOS.filter((s) => states.has(s)).map((s) => {
      const m = states.get(s)!.measurement;
      const raw = states.get("raw")?.measurement;
      return {
        scenario: LABELS[s],
        records: m.records,
        "records/s": Math.round(rate(m)),
        "× raw": raw === undefined ? "-" : (rate(m) / rate(raw)).toFixed(2),
        "p50 ms": m.batchP50Ms.toFixed(1),
        "p99 ms": m.batchP99Ms.toFixed(1),
        "peak RSS MB": mb(m.peakRssBytes),
        "Node CPU µs/rec": m.records > 0 ? ((m.cpuMs * 1000) / m.records).toFixed(1) : "-",
        "PG CPU µs/rec":
          m.postgresCpuMs === null || m.records === 0
            ? "-"
            : ((m.postgresCpuMs * 1000) / m.records).toFixed(1),
      };
    });
    process.stdout.write(`\n${table(rows)}\n`);
    if (states.has("naive") && naiveCount < count)
      process.stdout.write(
        `(4) ran on a bounded prefix: the first ${naiveCount} of ${count} records (--naive-count).\n`,
      );
    process.stdout.write(
      `\n${table(targets.map((t) => ({ target: t.name, value: t.value, required: t.required, result: t.status })))}\n`,
    );

    const file = join(resultsDir, `${started.toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          run,
          startedAt: started.toISOString(),
          machine: {
            cpus: cpus().length,
            memoryBytes: totalmem(),
            node: process.version,
            loadBefore,
            loadAfter,
          },
          database: redactUrl(config.databaseUrl),
          brokers: config.kafka.brokers,
          options: {
            count,
            naiveCount,
            partitions,
            duplicateRate,
            seed: flags.seed,
            partitionsConsumedConcurrently: config.partitionsConsumedConcurrently,
            memoryBudgetBytes: config.memoryBudgetBytes,
            fetchBytesPerPartition: ownFetchBytes,
            maxBatchRecords: config.maxBatchRecords,
            maxBatchBytes: config.maxBatchBytes,
            dbPoolSize: config.dbPoolSize,
          },
          topic,
          produce: { records: count, ms: produceMs, ...expected },
          scenarios: Object.fromEntries(
            [...states].map(([name, state]) => [
              name,
              {
                label: LABELS[name],
                recordsPerSecond: rate(state.measurement),
                ratioToRaw: states.has("raw")
                  ? rate(state.measurement) / rate(states.get("raw")!.measurement)
                  : null,
                ...state.measurement,
                dedupe: state.dedupe,
              },
            ]),
          ),
          targets,
        },
        null,
        2,
      )}\n`,
    );
    say(`results written to ${file}; load average now ${loadAfter.map((l) => l.toFixed(2)).join(" ")}`);
    if (targets.some((t: TargetResult) => t.status === "missed")) {
      say("some targets were missed (see the table above)");
      process.exitCode = 1;
    }
  } finally {
    if (!flags.keep && flags.topic === undefined) {
      await admin
        .deleteTopics([topic])
        .catch((error: unknown) => log.warn({ err: error }, "topic not deleted"));
    }
    if (!flags.keep) for (const name of databases) await dropDatabase(config.databaseUrl, name);
    else say(`kept topic ${topic} and databases ${databases.join(", ")}`);
    await admin.close();
  }
}

/**
 * Compiles src/ and bench/ with tsc (bench/tsconfig.json, incremental) into .cache/bench-dist, so the
 * scenarios run plain JavaScript as an installed package does (no tsx loader in their CPU time or RSS).
 * @returns the path of the compiled bench/child.js.
 * @throws Error when tsc reports errors.
 */
function compileScenarios(): string {
  const root = join(import.meta.dirname, "..");
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const result = spawnSync(process.execPath, [tsc, "-p", join(root, "bench", "tsconfig.json")], {
    stdio: "inherit",
  });
  if (result.status !== 0) throw new Error("tsc -p bench/tsconfig.json failed (see above)");
  return join(root, ".cache", "bench-dist", "bench", "child.js");
}

/** Runs one scenario (compiled `child`) in a subprocess and returns what it measured. */
async function runScenario(
  script: string,
  spec: ScenarioSpec,
  profileDir: string | undefined,
  timeoutMs: number,
): Promise<ScenarioMeasurement> {
  // One directory per scenario (Node names the files by time, pid and thread).
  const nodeArgs =
    profileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", join(profileDir, spec.scenario)];
  const child = spawn(process.execPath, [...nodeArgs, script, JSON.stringify(spec)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  clearTimeout(timer);
  const line = out.split("\n").find((l) => l.startsWith(RESULT_MARKER));
  if (code !== 0 || line === undefined)
    throw new Error(
      `scenario ${spec.scenario} failed (exit ${code}${code === null ? ", killed after --timeout" : ""}); its stderr is above`,
    );
  return JSON.parse(line.slice(RESULT_MARKER.length)) as ScenarioMeasurement;
}

/** Creates and migrates database `name` on the server of `adminUrl`; returns its URL. */
async function createDatabase(adminUrl: string, name: string, created: string[]): Promise<string> {
  const admin = new pg.Client(connectionConfig(adminUrl));
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  created.push(name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = createPool({ connectionString: url.toString(), max: 1 });
  try {
    await migrate(pool, exampleProjections());
  } finally {
    await pool.end();
  }
  return url.toString();
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client(connectionConfig(adminUrl));
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** Dedupe state and derived tables of the ledger projection in a scenario's database. */
async function dedupeState(
  databaseUrl: string,
  topic: string,
): Promise<NonNullable<ScenarioState["dedupe"]>> {
  const pool = createPool({ connectionString: databaseUrl, max: 1 });
  try {
    const one = async (sql: string, params: unknown[]) =>
      Number((await pool.query<{ n: string }>(sql, params)).rows[0]!.n);
    return {
      checkpointRows: await one(
        "SELECT count(*) AS n FROM replayable.checkpoints WHERE projection = 'ledger' AND topic = $1",
        [topic],
      ),
      eventIdRows: await one(
        "SELECT count(*) AS n FROM replayable.processed_events WHERE projection = 'ledger'",
        [],
      ),
      deadLetters: await one(
        "SELECT count(*) AS n FROM replayable.dead_letters WHERE projection = 'ledger'",
        [],
      ),
      checksum: ledgerChecksum(await readLedgerState(drizzleOf(pool))),
    };
  } finally {
    await pool.end();
  }
}

/**
 * The fetch size per partition replayable plans for this topic (src/engine/memoryPlan.ts, from the
 * budget, the partitions and the records' mean size), which the raw and naive scenarios use too.
 */
function ownFetchBytesPerPartition(config: Config, partitions: number, bytesPerRecord: number): number {
  return planMemory({
    budgetBytes: config.memoryBudgetBytes,
    assignedPartitions: partitions,
    prefetch: config.prefetch,
    concurrently: config.partitionsConsumedConcurrently,
    observed: { bytesPerRecord, msPerRecord: undefined },
    caps: { maxBatchBytes: config.maxBatchBytes, maxBatchRecords: config.maxBatchRecords },
  }).fetchBytesPerPartition;
}

/** Mean bytes of a record's key, value and headers (names and values), as recordBytes counts them. */
function meanRecordBytes(records: readonly OutgoingRecord[]): number {
  let bytes = 0;
  for (const r of records) {
    bytes += Buffer.byteLength(r.key) + Buffer.byteLength(r.value);
    for (const [name, value] of Object.entries(r.headers)) bytes += name.length + Buffer.byteLength(value);
  }
  return records.length === 0 ? 1 : bytes / records.length;
}

const rate = recordsPerSecond;

function mb(bytes: number): number {
  return Math.round(bytes / 1024 / 1024);
}

function table(rows: readonly Record<string, string | number>[]): string {
  return formatTable(recordRows(rows), { rule: true }).join("\n");
}

function say(text: string): void {
  process.stderr.write(`bench: ${text}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
});
