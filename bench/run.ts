/**
 * `make bench`: for every shape (value size × partition count) produce a ledger stream once to a
 * topic of its own, then measure the scenarios on it, each in a subprocess of its own with its own
 * database and consumer group; check the targets per shape and write the results to
 * bench/results/<time>.json. Exits 1 when a target or a correctness check is missed, 2 when the
 * benchmark itself failed. docs/benchmarks.md explains the scenarios, the targets and the numbers.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Command } from "commander";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import pg from "pg";
import { loadConfig, redactUrl, type Config } from "../src/config.js";
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
  JAVA_DEFAULT_FETCH_BYTES_PER_PARTITION,
  meanRecordBytes,
  ownFetchBytesPerPartition,
} from "./fetchSize.js";
import { memoryLimited } from "./memoryLimit.js";
import { localBrokerPid, processCpuMs } from "./processCpu.js";
import {
  RESULT_MARKER,
  SCENARIOS,
  type ScenarioMeasurement,
  type ScenarioName,
  type ScenarioSpec,
} from "./scenario.js";
import {
  parseSizeList,
  produceBatchSize,
  PRODUCER_BATCH_BYTES,
  shapeCount,
  shapeLabel,
  shapeSlug,
  shapesOf,
  type Shape,
} from "./shapes.js";
import {
  coresBusy,
  evaluateTargets,
  perRecord,
  postgresCpuUsPerRecord,
  recordsPerSecond,
  type ScenarioState,
  type TargetInput,
  type TargetResult,
} from "./targets.js";
import { formatTable, recordRows } from "../src/text/textTable.js";

/**
 * The memory limit each scenario runs under by default, MiB: a small container's (Kubernetes users
 * often give a service 512Mi). Node.js sizes its heap from it (bench/memoryLimit.ts).
 */
const DEFAULT_MEMORY_LIMIT_MIB = 512;

interface Flags {
  count: string;
  naiveCount: string;
  valueBytes: string;
  partitions: string;
  maxShapeMib: string;
  duplicateRate: string;
  producerBatchBytes: string;
  seed: string;
  only?: string;
  keep: boolean;
  topic?: string;
  cpuProf: boolean;
  allocProf: boolean;
  timeout: string;
  memoryLimitMib: string;
  client: string;
}

/** The parsed flags. */
interface Options {
  readonly count: number;
  readonly naiveCount: number;
  readonly shapes: readonly Shape[];
  readonly maxShapeMiB: number;
  /** --producer-batch-bytes: bytes of one partition's record batch the producer aims at. */
  readonly producerBatchBytes: number;
  readonly duplicateRate: number;
  readonly seed: number;
  readonly only: readonly ScenarioName[];
  readonly keep: boolean;
  /** --topic: prefix of reused topics (never deleted); undefined: new topics. */
  readonly topicPrefix: string | undefined;
  readonly cpuProf: boolean;
  /** --alloc-prof: a sampling allocation profile of each scenario (see ScenarioSpec.allocationProfile). */
  readonly allocProf: boolean;
  readonly timeoutMs: number;
  /** --memory-limit-mib: each scenario's subprocess runs in a cgroup of this limit, bytes; 0: none. */
  readonly memoryLimitBytes: number;
  /** --client: the Kafka client of the replayable scenarios' member (KAFKA_CLIENT). */
  readonly client: "kafkajs" | "platformatic";
}

/** What the shapes of one run share. */
interface RunContext {
  readonly options: Options;
  readonly config: Config;
  readonly log: Logger;
  readonly run: string;
  readonly kafka: Kafka;
  readonly admin: KafkaAdmin;
  /** The compiled bench/child.js. */
  readonly child: string;
  readonly resultsDir: string;
}

/** What one shape measured. */
interface ShapeResult {
  readonly shape: Shape;
  readonly topic: string;
  readonly count: number;
  readonly fetchBytesPerPartition: { readonly raw: number; readonly "raw-1mib": number };
  readonly produceMs: number;
  readonly expected: TargetInput["expected"];
  readonly naiveCount: number;
  readonly states: ReadonlyMap<ScenarioName, ScenarioState>;
  readonly targets: readonly TargetResult[];
}

/** Scenarios that run on the first shape only: they measure the cost per record, and take minutes. */
const FIRST_SHAPE_ONLY: readonly ScenarioName[] = ["per-record", "naive"];

const LABELS: Record<ScenarioName, string> = {
  raw: "raw KafkaJS, own fetch size",
  "raw-1mib": "raw KafkaJS, 1 MiB fetch",
  "raw-platformatic": "raw @platformatic/kafka, 1 MiB fetch",
  batch: "batch apply, event-id dedupe",
  "batch-offset": "batch apply, offset dedupe",
  replay: "replay of batch",
  "per-record": "per-record apply",
  naive: "naive: 1 transaction/record",
};

const program = new Command("bench")
  .description("benchmark replayable against raw KafkaJS consumption on the local stack")
  .option(
    "--count <n>",
    "ledger records to produce per shape, duplicates included (capped by --max-shape-mib)",
    "200000",
  )
  .option("--naive-count <n>", "records the naive scenario consumes: a bounded prefix", "100000")
  .option(
    "--value-bytes <list>",
    "sizes of the JSON values, bytes (ledger values padded up to each)",
    "200,700,4096",
  )
  .option("--partitions <list>", "partition counts of the topics", "6,24")
  .option("--max-shape-mib <n>", "at most this many MiB of values in one shape's topic (caps --count)", "256")
  .option("--duplicate-rate <r>", "fraction of re-sent records", "0.01")
  .option(
    "--producer-batch-bytes <n>",
    "bytes of one partition's record batch the producer aims at (Java's batch.size default)",
    String(PRODUCER_BATCH_BYTES),
  )
  .option("--seed <n>", "seed of the ledger stream", "1")
  .option("--only <list>", `comma-separated subset of ${SCENARIOS.join(",")}`)
  .option("--keep", "keep the topics and the databases afterwards", false)
  .option(
    "--topic <prefix>",
    "reuse the topics <prefix>-<bytes>b<partitions>p when they already hold the stream of the same shape, count, --seed and --duplicate-rate (e.g. kept by --keep); they are never deleted",
  )
  .option("--cpu-prof", "write a V8 CPU profile of each scenario to bench/results/profiles/", false)
  .option(
    "--alloc-prof",
    "write a sampling allocation profile (.heapprofile, garbage included) of each scenario to bench/results/profiles/; it slows the scenario",
    false,
  )
  .option("--timeout <s>", "give up on a scenario after this many seconds", "3600")
  .option(
    "--memory-limit-mib <n>",
    "run each scenario in a cgroup with this memory limit, as in a container (0: none)",
    String(DEFAULT_MEMORY_LIMIT_MIB),
  )
  .option(
    "--client <name>",
    "the Kafka client of the replayable scenarios' member: kafkajs or platformatic (KAFKA_CLIENT)",
    "kafkajs",
  );

function positiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${flag}: "${text}" is not a whole number >= 1`);
  return n;
}

/** Parses and checks the flags. @throws Error naming the flag and what is valid. */
function parseOptions(flags: Flags): Options {
  const duplicateRate = Number(flags.duplicateRate);
  if (!(duplicateRate >= 0 && duplicateRate < 1))
    throw new Error(`--duplicate-rate: "${flags.duplicateRate}" must be a number in [0, 1)`);
  const only = flags.only?.split(",").map((s) => s.trim()) ?? [...SCENARIOS];
  for (const name of only)
    if (!SCENARIOS.includes(name as ScenarioName))
      throw new Error(`--only: "${name}" is not a scenario; use some of ${SCENARIOS.join(",")}`);
  if (only.includes("replay") && !only.includes("batch"))
    throw new Error("--only: replay re-reads what batch applied; list batch too");
  return {
    count: positiveInt("--count", flags.count),
    naiveCount: positiveInt("--naive-count", flags.naiveCount),
    shapes: shapesOf(
      parseSizeList("--value-bytes", flags.valueBytes),
      parseSizeList("--partitions", flags.partitions),
    ),
    maxShapeMiB: positiveInt("--max-shape-mib", flags.maxShapeMib),
    producerBatchBytes: positiveInt("--producer-batch-bytes", flags.producerBatchBytes),
    duplicateRate,
    seed: positiveInt("--seed", flags.seed),
    only: SCENARIOS.filter((s) => only.includes(s)),
    keep: flags.keep,
    topicPrefix: flags.topic,
    cpuProf: flags.cpuProf,
    allocProf: flags.allocProf,
    timeoutMs: positiveInt("--timeout", flags.timeout) * 1000,
    memoryLimitBytes:
      flags.memoryLimitMib === "0"
        ? 0
        : positiveInt("--memory-limit-mib", flags.memoryLimitMib) * 1024 * 1024,
    client: clientOf(flags.client),
  };
}

/** `--client`'s value. @throws Error naming the flag and the clients. */
function clientOf(text: string): "kafkajs" | "platformatic" {
  if (text === "kafkajs" || text === "platformatic") return text;
  throw new Error(`--client: "${text}" is not a Kafka client; use kafkajs or platformatic`);
}

async function main(): Promise<void> {
  const options = parseOptions(program.parse().opts<Flags>());
  const config = loadConfig(process.env);
  const log = createLogger(process.env.LOG_LEVEL ?? "warn", { bench: true });
  const run = randomBytes(4).toString("hex");
  const resultsDir = join(import.meta.dirname, "results");
  mkdirSync(resultsDir, { recursive: true });
  const started = new Date();
  const loadBefore = loadavg();
  say(
    `bench ${run}: ${options.shapes.length} shapes (${options.shapes.map(shapeLabel).join(", ")}), up to ${options.count} records each, ${options.duplicateRate * 100}% duplicates, replayable on ${options.client}; load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} cores`,
  );
  const child = compileScenarios();
  const kafka = createKafka({
    brokers: config.kafka.brokers,
    clientId: "replayable-bench",
    log,
    security: config.kafka.security,
  });
  const admin = await KafkaAdmin.connect(kafka);
  const results: ShapeResult[] = [];
  try {
    const ctx: RunContext = { options, config, log, run, kafka, admin, child, resultsDir };
    for (const [i, shape] of options.shapes.entries()) results.push(await runShape(ctx, shape, i === 0));
  } finally {
    await admin.close();
  }
  const loadAfter = loadavg();
  const durationMs = Date.now() - started.getTime();
  process.stdout.write(`\n${table(results.flatMap(measurementRows))}\n`);
  const naive = results.find((r) => r.states.has("naive"));
  if (naive !== undefined && naive.naiveCount < naive.count)
    process.stdout.write(
      `naive ran on a bounded prefix: the first ${naive.naiveCount} of ${naive.count} records (--naive-count).\n`,
    );
  process.stdout.write(`\n${table(results.flatMap(targetRows))}\n`);
  const file = join(resultsDir, `${started.toISOString().replace(/[:.]/g, "-")}.json`);
  const machine = {
    cpus: cpus().length,
    memoryBytes: totalmem(),
    node: process.version,
    loadBefore,
    loadAfter,
  };
  writeFileSync(
    file,
    `${JSON.stringify({ run, startedAt: started.toISOString(), durationMs, machine, ...settings(config, options), shapes: results.map(shapeJson) }, null, 2)}\n`,
  );
  say(
    `done in ${(durationMs / 60_000).toFixed(1)} min; results written to ${file}; load average now ${loadAfter.map((l) => l.toFixed(2)).join(" ")}`,
  );
  if (results.some((r) => r.targets.some((t) => t.status === "missed"))) {
    say("some targets were missed (see the table above)");
    process.exitCode = 1;
  }
}

/**
 * Produces `shape`'s stream to a topic of its own, runs the scenarios on it, checks its targets,
 * then deletes the topic and the databases (unless --keep or --topic).
 */
async function runShape(ctx: RunContext, shape: Shape, first: boolean): Promise<ShapeResult> {
  const { options, admin } = ctx;
  const label = shapeLabel(shape);
  const count = shapeCount(options.count, shape, options.maxShapeMiB);
  const naiveCount = Math.min(options.naiveCount, count);
  const baseTopic = `${options.topicPrefix ?? `bench-ledger-${ctx.run}`}-${shapeSlug(shape)}`;
  const topics: string[] = [];
  const databases: string[] = [];
  try {
    const stream = generateLedgerStream({
      count,
      duplicateRate: options.duplicateRate,
      seed: options.seed,
      valueBytes: shape.valueBytes,
    });
    const produceStart = performance.now();
    const { topic, end } = await produceShape(ctx, baseTopic, shape, stream.records, topics);
    const produceMs = performance.now() - produceStart;
    const { events, duplicates, checksum, everyRecordChecksum } = stream;
    const expected = { events, duplicates, checksum, everyRecordChecksum };
    const bytesPerRecord = meanRecordBytes(stream.records);
    stream.records.length = 0;
    say(
      `${label}: produced ${count} records${count < options.count ? ` (--count capped at ${options.maxShapeMiB} MiB of values)` : ""}, ${events} events, ${duplicates} re-sent, to ${topic} in ${(produceMs / 1000).toFixed(1)} s`,
    );
    const fetchBytesPerPartition = {
      raw: ownFetchBytesPerPartition(ctx.config, shape.partitions, bytesPerRecord),
      "raw-1mib": JAVA_DEFAULT_FETCH_BYTES_PER_PARTITION,
    };
    const states = new Map<ScenarioName, ScenarioState>();
    const groups = new Map<ScenarioName, { group: string; databaseUrl: string }>();
    for (const scenario of options.only) {
      if (!first && FIRST_SHAPE_ONLY.includes(scenario)) continue;
      const target = await scenarioTarget(ctx, shape, topic, scenario, groups, databases);
      groups.set(scenario, target);
      const fetchBytes =
        scenario === "raw" || scenario === "naive"
          ? fetchBytesPerPartition.raw
          : scenario === "raw-1mib" || scenario === "raw-platformatic"
            ? fetchBytesPerPartition["raw-1mib"]
            : undefined;
      const spec: ScenarioSpec = {
        scenario,
        topic,
        group: target.group,
        brokers: ctx.config.kafka.brokers,
        databaseUrl: target.databaseUrl,
        end,
        ...(scenario === "naive" && naiveCount < count ? { limit: naiveCount } : {}),
        partitionsConsumedConcurrently: ctx.config.partitionsConsumedConcurrently,
        ...(fetchBytes === undefined ? {} : { maxBytesPerPartition: fetchBytes }),
        client: options.client,
        ...(options.allocProf
          ? {
              allocationProfile: join(
                ctx.resultsDir,
                "profiles",
                shapeSlug(shape),
                `${scenario}.${process.pid}.heapprofile`,
              ),
            }
          : {}),
      };
      say(
        `${label}: ${LABELS[scenario]}: running${spec.limit === undefined ? "" : ` on the first ${spec.limit} records`} ...`,
      );
      const profileDir = options.cpuProf ? join(ctx.resultsDir, "profiles", shapeSlug(shape)) : undefined;
      const brokerPid = localBrokerPid(join(import.meta.dirname, ".."));
      const brokerBefore = processCpuMs(brokerPid);
      const measured = await runScenario(ctx, spec, profileDir);
      const brokerAfter = processCpuMs(brokerPid);
      const brokerCpuMs =
        brokerBefore === undefined || brokerAfter === undefined ? null : brokerAfter - brokerBefore;
      const measurement: ScenarioMeasurement = { ...measured, brokerCpuMs };
      const dedupe = target.databaseUrl === "" ? undefined : await dedupeState(target.databaseUrl, topic);
      states.set(scenario, { measurement, ...(dedupe === undefined ? {} : { dedupe }) });
      say(
        `${label}: ${LABELS[scenario]}: ${rate(measurement).toFixed(0)} records/s, p50 ${measurement.batchP50Ms.toFixed(1)} ms, p99 ${measurement.batchP99Ms.toFixed(1)} ms, peak RSS ${mb(measurement.peakRssBytes)} MB`,
      );
    }
    const input = { states, partitions: shape.partitions, expected, count, naiveLimited: naiveCount < count };
    const targets = evaluateTargets(input);
    return { shape, topic, count, fetchBytesPerPartition, produceMs, expected, naiveCount, states, targets };
  } finally {
    // Only the topics this run created; a reused --topic is never deleted.
    if (!options.keep && topics.length > 0)
      await admin
        .deleteTopics(topics)
        .catch((error: unknown) => ctx.log.warn({ err: error }, "topic not deleted"));
    if (!options.keep) for (const name of databases) await dropDatabase(ctx.config.databaseUrl, name);
    else say(`${label}: kept topics ${topics.join(", ")} and databases ${databases.join(", ")}`);
  }
}

/** Attempts at producing a shape's stream to a new topic before the run gives up. */
const PRODUCE_ATTEMPTS = 3;

/**
 * Produces `records` to a new topic `baseTopic` (pushed onto `created`), or reuses it when it exists
 * (--topic). The producer is idempotent (KIP-98), so a request it retried after a partial failure
 * (e.g. NOT_LEADER_OR_FOLLOWER on a topic created a moment ago) is written once; should the topic
 * still not hold exactly the stream, it is produced again to `<baseTopic>-<attempt>`.
 * @returns the topic and its high watermark per partition.
 * @throws Error when a reused topic, or the last attempt's, does not hold the stream.
 */
async function produceShape(
  ctx: RunContext,
  baseTopic: string,
  shape: Shape,
  records: readonly OutgoingRecord[],
  created: string[],
): Promise<{ topic: string; end: string[] }> {
  for (let attempt = 1; ; attempt++) {
    const topic = attempt === 1 ? baseTopic : `${baseTopic}-${attempt}`;
    const fresh = await ctx.admin.createTopic(topic, shape.partitions);
    if (fresh) {
      created.push(topic);
      await produceRecords(ctx.kafka, topic, records, {
        batchSize: produceBatchSize(shape.valueBytes, shape.partitions, ctx.options.producerBatchBytes),
        idempotent: true,
      });
    }
    try {
      return { topic, end: await checkTopic(ctx.admin, topic, records.length, shape.partitions) };
    } catch (error) {
      if (!fresh || attempt >= PRODUCE_ATTEMPTS) throw error;
      say(`${(error as Error).message}: producing again to a new topic`);
    }
  }
}

/**
 * The high watermark per partition of `topic`, after checking it holds `count` records in
 * `partitions` partitions. @throws Error when it does not (a reused --topic of another stream).
 */
async function checkTopic(
  admin: KafkaAdmin,
  topic: string,
  count: number,
  partitions: number,
): Promise<string[]> {
  const offsets = await admin.topicOffsets(topic);
  const held = offsets.reduce((n, o) => n + BigInt(o.highWatermark) - BigInt(o.logStartOffset), 0n);
  if (held !== BigInt(count) || offsets.length !== partitions)
    throw new Error(
      `topic ${topic} holds ${held} records in ${offsets.length} partitions, not the ${count} in ${partitions} this run expects; give another --topic`,
    );
  return offsets.map((o) => o.highWatermark);
}

/**
 * The consumer group and database of `scenario`: new ones (no database for the raw scenarios), or
 * for `replay` those of `batch`, its group reset to the earliest offsets.
 */
async function scenarioTarget(
  ctx: RunContext,
  shape: Shape,
  topic: string,
  scenario: ScenarioName,
  groups: ReadonlyMap<ScenarioName, { group: string; databaseUrl: string }>,
  databases: string[],
): Promise<{ group: string; databaseUrl: string }> {
  if (scenario === "replay") {
    const target = groups.get("batch")!;
    const offsets = await ctx.admin.topicOffsets(topic);
    await ctx.admin.setOffsets(
      target.group,
      topic,
      offsets.map((o) => ({ partition: o.partition, offset: o.logStartOffset })),
    );
    return target;
  }
  const group = `bench-${scenario}-${shapeSlug(shape)}-${ctx.run}`;
  if (scenario === "raw" || scenario === "raw-1mib" || scenario === "raw-platformatic")
    return { group, databaseUrl: "" };
  const name = `bench_${ctx.run}_${shapeSlug(shape)}_${scenario.replace("-", "_")}`;
  return { group, databaseUrl: await createDatabase(ctx.config.databaseUrl, name, databases) };
}

/** Rows of the measurement table for one shape. */
function measurementRows(result: ShapeResult): Record<string, string | number>[] {
  const ratio = (m: ScenarioMeasurement, to: ScenarioName) => {
    const base = result.states.get(to)?.measurement;
    return base === undefined || rate(base) === 0 ? "-" : (rate(m) / rate(base)).toFixed(2);
  };
  return [...result.states].map(([scenario, { measurement: m }]) => ({
    shape: shapeLabel(result.shape),
    scenario,
    records: m.records,
    "records/s": Math.round(rate(m)),
    "× raw-1mib": ratio(m, "raw-1mib"),
    "× raw": ratio(m, "raw"),
    "p50 ms": m.batchP50Ms.toFixed(1),
    "p99 ms": m.batchP99Ms.toFixed(1),
    "peak RSS MB": mb(m.peakRssBytes),
    "Node CPU µs/rec": m.records > 0 ? ((m.cpuMs * 1000) / m.records).toFixed(1) : "-",
    "PG CPU µs/rec": postgresCpuUsPerRecord(m)?.toFixed(1) ?? "-",
    "broker CPU µs/rec": perRecord(m, m.brokerCpuMs)?.toFixed(1) ?? "-",
    "cores busy": coresBusy(m)?.toFixed(2) ?? "-",
    "event loop busy": m.eventLoopBusy === undefined ? "-" : m.eventLoopBusy.toFixed(2),
    "GC µs/rec": perRecord(m, m.gcPauseMs)?.toFixed(1) ?? "-",
    "tx p50 ms": m.transactionP50Ms === undefined ? "-" : m.transactionP50Ms.toFixed(1),
    "in tx": m.inTransaction === undefined ? "-" : m.inTransaction.toFixed(2),
  }));
}

/** Rows of the target table for one shape. */
function targetRows(result: ShapeResult): Record<string, string | number>[] {
  return result.targets.map((t) => ({
    shape: shapeLabel(result.shape),
    target: t.name,
    value: t.value,
    required: t.required,
    result: t.status,
  }));
}

/** One shape in the JSON result file: everything it measured and checked. */
function shapeJson(result: ShapeResult): unknown {
  const rawRate = (name: ScenarioName) => {
    const m = result.states.get(name)?.measurement;
    return m === undefined ? undefined : rate(m);
  };
  return {
    ...result.shape,
    label: shapeLabel(result.shape),
    topic: result.topic,
    count: result.count,
    naiveCount: result.naiveCount,
    fetchBytesPerPartition: result.fetchBytesPerPartition,
    produce: { records: result.count, ms: result.produceMs, ...result.expected },
    scenarios: Object.fromEntries(
      [...result.states].map(([name, state]) => {
        const r = rate(state.measurement);
        const to = (base: number | undefined) => (base === undefined || base === 0 ? null : r / base);
        return [
          name,
          {
            label: LABELS[name],
            recordsPerSecond: r,
            ratioToRaw1MiB: to(rawRate("raw-1mib")),
            ratioToRaw: to(rawRate("raw")),
            ...state.measurement,
            dedupe: state.dedupe,
          },
        ];
      }),
    ),
    targets: result.targets,
  };
}

/** The run's settings for the JSON result file. */
function settings(config: Config, options: Options): Record<string, unknown> {
  return {
    database: redactUrl(config.databaseUrl),
    brokers: config.kafka.brokers,
    options: {
      count: options.count,
      naiveCount: options.naiveCount,
      valueBytes: [...new Set(options.shapes.map((s) => s.valueBytes))],
      partitions: [...new Set(options.shapes.map((s) => s.partitions))],
      maxShapeMiB: options.maxShapeMiB,
      producerBatchBytes: options.producerBatchBytes,
      duplicateRate: options.duplicateRate,
      seed: options.seed,
      only: options.only,
      partitionsConsumedConcurrently: config.partitionsConsumedConcurrently,
      prefetch: config.prefetch,
      memoryBudgetBytes: config.memoryBudgetBytes,
      maxBatchRecords: config.maxBatchRecords ?? null,
      maxBatchBytes: config.maxBatchBytes ?? null,
      dbPoolSize: config.dbPoolSize,
    },
  };
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

/**
 * Runs one scenario (compiled `ctx.child`) in a subprocess, under `--memory-limit-mib` when a cgroup
 * can be made for it (bench/memoryLimit.ts; otherwise without a limit, said once), and returns what
 * it measured with the limit it ran under.
 */
async function runScenario(
  ctx: RunContext,
  spec: ScenarioSpec,
  profileDir: string | undefined,
): Promise<ScenarioMeasurement> {
  const { options } = ctx;
  // One directory per scenario (Node names the files by time, pid and thread).
  // The resolve hook `replayable run` starts with (bin/replayable.js): start-up as users get it.
  const nodeArgs = [
    "--import",
    join(import.meta.dirname, "..", "bin", "resolveHooks.js"),
    ...(profileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", join(profileDir, spec.scenario)]),
  ];
  const args = [...nodeArgs, ctx.child, JSON.stringify(spec)];
  const limited =
    options.memoryLimitBytes === 0
      ? undefined
      : memoryLimited(
          `replayable-bench-${process.pid}-${spec.scenario}`,
          options.memoryLimitBytes,
          process.execPath,
          args,
        );
  if (typeof limited === "string" && !warnedNoLimit) {
    warnedNoLimit = true;
    say(`bench: no memory limit for the scenarios (${limited}); peak RSS is that of an unlimited process`);
  }
  const command = typeof limited === "object" ? limited : { command: process.execPath, args };
  try {
    const measured = await runSubprocess(command.command, command.args, spec, options.timeoutMs);
    return { ...measured, memoryLimitBytes: typeof limited === "object" ? limited.limitBytes : null };
  } finally {
    if (typeof limited === "object") limited.remove();
  }
}

/** Said once per run: the scenarios run without a memory limit. */
let warnedNoLimit = false;

/** Spawns a scenario's subprocess and reads its measurement from stdout. */
async function runSubprocess(
  command: string,
  args: readonly string[],
  spec: ScenarioSpec,
  timeoutMs: number,
): Promise<ScenarioMeasurement> {
  const child = spawn(command, args, {
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
