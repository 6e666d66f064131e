/**
 * The soak (issue 25, "A randomized soak checked against a reference model"): the ledger projection
 * run by 2–3 `replayable run` processes on a three-broker cluster while a producer sends a seeded
 * ledger stream with re-sends and a seeded nemesis injects faults; then the faults stop, the group
 * catches up (lag 0), the checker compares every balance and order with the model of the log, and
 * one more `replay --to-earliest --execute` must change nothing.
 *
 * Structure: {@link LedgerProducer} (generator.ts) → members (members.ts) ← {@link Nemesis}
 * (nemesis.ts); everything goes to the {@link History} (history.ts); {@link check} (checker.ts)
 * gives the verdict. A failure is returned with the seed, the history's path and its last lines, so
 * `SOAK_SEED=<seed> SOAK_SECONDS=<s> make soak` runs the same schedule again.
 *
 * Needs: the three-broker cluster of test/helpers/cluster.ts (KAFKA_BROKERS, KAFKA_CLUSTER_PORT… set
 * before this module is imported: test/soak/main.ts does that), and PostgreSQL (`serverUrl`).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { errorMessage } from "../../src/errors.js";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { createKafka } from "../../src/kafka/client.js";
import { createLogger } from "../../src/logger.js";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import { ledgerChecksum } from "../../src/projections/ledger/checksum.js";
import { createReplicatedTopic, ensureAllBrokersUp } from "../helpers/cluster.js";
import { BROKERS, testAdmin, waitFor } from "../helpers/stack.js";
import { check, readDatabase, readLog, type CheckResult } from "./checker.js";
import { LedgerProducer } from "./generator.js";
import { History } from "./history.js";
import { BIN, Members, ROOT } from "./members.js";
import { Nemesis, type CliResult, type FaultName } from "./nemesis.js";
import { startNetwork, type BrokerPorts } from "./network.js";
import { SoakRandom } from "./random.js";

/** Options of {@link runSoak}. */
export interface SoakOptions {
  /** How long the producer and the nemesis run, in seconds; the catch-up and the checks come after. */
  readonly seconds: number;
  /** The seed of every random choice (32-bit unsigned). */
  readonly seed: number;
  /** Members of the group, 2 or 3; default 3. */
  readonly members?: number;
  /** Records per second the producer aims at; default 40. */
  readonly ratePerSecond?: number;
  /** Partitions of the topic; default 6. */
  readonly partitions?: number;
  /** Fraction of records that are re-sends of an earlier event; default 0.1. */
  readonly duplicateRate?: number;
  /** A PostgreSQL URL of the server; the soak creates a database of its own there. */
  readonly serverUrl: string;
  /** Folder for the history and the member logs. */
  readonly runDir: string;
  /** How long the group may take to reach lag 0 after the faults stop, in ms; default 300 000. */
  readonly settleTimeoutMs?: number;
  /**
   * The brokers' client and advertised ports: the soak puts a fault proxy on each advertised port
   * and one in front of PostgreSQL, and the members connect only through them (network.ts).
   * Undefined: no proxies, no network faults (the brokers must then advertise their client ports).
   */
  readonly proxies?: BrokerPorts;
  /** Only these faults (SOAK_FAULTS); default all. */
  readonly faults?: readonly FaultName[];
  /** Progress lines; default stdout. */
  readonly log?: (line: string) => void;
}

/** What {@link runSoak} found. */
export interface SoakResult {
  readonly ok: boolean;
  readonly seed: number;
  readonly seconds: number;
  readonly historyPath: string;
  /** Why the run failed (the checker's findings or the step that broke); undefined when ok. */
  readonly failure?: string;
  /** The check after the faults, and the one after the last replay. */
  readonly checks: readonly CheckResult[];
  readonly faults: Readonly<Record<string, number>>;
  readonly produced: number;
  /** Partitions whose committed offset stood still for 2 minutes with lag (reported, not a failure). */
  readonly stalls: number;
}

/**
 * A partition whose committed offset stays put this long while it has lag is reported as a stall
 * (ms): longer than any fault's hold plus a rejoin.
 */
const STALL_MS = 120_000;

/** The members' session timeout: short, so a paused member's partitions move within the soak. */
const SESSION_TIMEOUT_MS = 10_000;

/**
 * Runs one soak and returns its verdict; never throws for a finding (only for a broken setup:
 * no PostgreSQL, no cluster). Every process it started is stopped before it returns.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const out = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const memberCount = options.members ?? 3;
  const rate = options.ratePerSecond ?? 40;
  const partitions = options.partitions ?? 6;
  mkdirSync(options.runDir, { recursive: true });
  const history = new History(join(options.runDir, "history.jsonl"), (line) => out(`  ${line}`));
  const random = new SoakRandom(options.seed);
  const suffix = `${options.seed}_${randomBytes(3).toString("hex")}`;
  const topic = `soak-ledger-${suffix}`;
  const group = `soak-ledger-${suffix}`;
  const dbName = `soak_${suffix}`;
  const databaseUrl = withDatabase(options.serverUrl, dbName);
  out(
    `soak: seed ${options.seed}, ${options.seconds} s of faults, ${memberCount} members, ${rate} records/s`,
  );
  out(`soak: history ${history.path}`);
  history.write("soak-start", {
    seed: options.seed,
    seconds: options.seconds,
    members: memberCount,
    rate,
    topic,
    group,
    database: dbName,
    brokers: BROKERS,
  });

  const kafka = createKafka({ brokers: BROKERS, clientId: "replayable-soak", log: createLogger("silent") });
  await ensureAllBrokersUp();
  const server = new pg.Client({ connectionString: options.serverUrl });
  await server.connect();
  await server.query(`CREATE DATABASE ${dbName}`);
  await server.end();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const admin = await testAdmin(BROKERS);
  const network =
    options.proxies === undefined ? undefined : await startNetwork(databaseUrl, options.proxies);
  const memberDatabaseUrl = network?.databaseUrl ?? databaseUrl;
  const memberBrokers = network?.brokers ?? BROKERS;

  const cli = async (args: readonly string[]): Promise<CliResult> => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, KAFKA_BROKERS: BROKERS.join(","), LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const [code] = (await once(child, "exit")) as [number | null];
    return { code, stdout, stderr };
  };

  const cliUntilAccepted = async (args: readonly string[]): Promise<CliResult> => {
    const deadline = Date.now() + 180_000;
    for (;;) {
      const r = await cli(args);
      if (r.code !== 1 || !r.stderr.includes("refused") || Date.now() > deadline) return r;
      history.write("refused", { command: args[0], stderr: r.stderr.trim().slice(-300) });
      await sleep(5000);
    }
  };

  const members = new Members(
    memberCount,
    {
      topic,
      group,
      databaseUrl: memberDatabaseUrl,
      brokers: memberBrokers,
      logDir: options.runDir,
      env: {
        REPLAYABLE_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
        REPLAYABLE_HEARTBEAT_INTERVAL_MS: "1000",
        REPLAYABLE_SHUTDOWN_TIMEOUT_MS: "20000",
        REPLAYABLE_DB_POOL_SIZE: "4",
        REPLAYABLE_PARTITIONS_CONCURRENTLY: "3",
      },
    },
    history,
  );
  const stream = generateLedgerStream({
    // More than the producer can send in the time: it stops when the faults stop.
    count: Math.ceil(rate * (options.seconds + 600)),
    duplicateRate: options.duplicateRate ?? 0.1,
    seed: options.seed,
    idPrefix: `soak-${suffix}-`,
  });
  const producer = new LedgerProducer({
    kafka,
    topic,
    records: stream.records,
    partitions,
    ratePerSecond: rate,
    history,
  });
  const nemesis = new Nemesis({
    random: random.derive("nemesis"),
    history,
    members,
    admin,
    topic,
    group,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    cli,
    cliUntilAccepted,
    ...(network === undefined ? {} : { network: network.faults }),
    ...(options.faults === undefined ? {} : { only: options.faults }),
  });

  const watch = new ProgressWatch(admin, topic, group, history);
  const checks: CheckResult[] = [];
  let failure: string | undefined;
  let snapshots: NodeJS.Timeout | undefined;
  try {
    const migrated = await cli(["migrate", "--projection", "ledger"]);
    if (migrated.code !== 0) throw new Error(`migrate exited ${migrated.code}: ${migrated.stderr}`);
    await createReplicatedTopic(topic, partitions);
    members.startAll();
    await waitFor(
      `${memberCount} members in group ${group}`,
      async () => {
        const g = await admin.describeGroup(group);
        return g.state === "Stable" && g.members.length === memberCount ? true : undefined;
      },
      180_000,
      500,
    );
    history.write("group-formed", {});
    await producer.start();
    snapshots = setInterval(() => void watch.snapshot(), 15_000);
    nemesis.start(Date.now() + options.seconds * 1000);
    await sleep(options.seconds * 1000);

    out("soak: stopping the faults and the producer");
    await nemesis.stop();
    const produced = await producer.stop();
    history.write("faults-stopped", {
      produced,
      produceFailures: producer.failures,
      produceIncomplete: producer.incomplete,
      faults: Object.fromEntries(nemesis.counts),
    });
    await ensureAllBrokersUp();
    if (network !== undefined) for (const t of network.faults.targets) await network.faults.restore(t);
    members.startAll();

    out("soak: waiting for lag 0");
    await waitForLagZero(admin, topic, group, options.settleTimeoutMs ?? 300_000, history);
    const first = await runCheck(kafka, admin, pool, topic, producer.acked, history);
    checks.push(first);
    const before = ledgerChecksum(await readDatabase(pool, topic));

    out("soak: replay --to-earliest --execute, then lag 0 again: nothing may change");
    await members.stopAll();
    await nemesis.waitEmpty();
    const replay = await cliUntilAccepted([
      "replay",
      "--group",
      group,
      "--projection",
      "ledger",
      "--all-topics",
      "--to-earliest",
      "--execute",
      "--output",
      "json",
    ]);
    history.write("final-replay", { code: replay.code, stderr: replay.stderr.trim().slice(-500) });
    if (replay.code !== 0)
      throw new Error(`the final replay --execute exited ${replay.code}: ${replay.stderr}`);
    members.startAll();
    await waitForLagZero(admin, topic, group, options.settleTimeoutMs ?? 300_000, history);
    const second = await runCheck(kafka, admin, pool, topic, producer.acked, history);
    checks.push(second);
    const after = ledgerChecksum(await readDatabase(pool, topic));
    history.write("final-checksums", { before, after });

    const problems: string[] = [];
    for (const [i, c] of checks.entries())
      if (!c.ok)
        problems.push(
          `check ${i + 1} (${i === 0 ? "after the faults" : "after the last replay"}): ${describe(c)}`,
        );
    if (before !== after)
      problems.push(`the last replay changed the ledger: checksum ${before} before, ${after} after`);
    if (problems.length > 0) failure = problems.join("\n");
  } catch (error) {
    failure = `the soak stopped: ${errorMessage(error)}`;
    history.write("soak-error", { error: errorMessage(error) });
  } finally {
    clearInterval(snapshots);
    await nemesis.stop().catch(() => undefined);
    await producer.stop().catch(() => undefined);
    const codes = await members.stopAll(30_000);
    history.write("members-stopped", { codes });
    await network?.close().catch(() => undefined);
    await admin.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }

  const result: SoakResult = {
    ok: failure === undefined,
    seed: options.seed,
    seconds: options.seconds,
    historyPath: history.path,
    ...(failure === undefined ? {} : { failure }),
    checks,
    faults: Object.fromEntries(nemesis.counts),
    produced: producer.sent,
    stalls: watch.stalls,
  };
  history.write("soak-end", {
    ok: result.ok,
    failure,
    faults: result.faults,
    produced: result.produced,
    stalls: result.stalls,
    checks: checks.map(brief),
  });
  if (result.ok) {
    await dropDatabase(options.serverUrl, dbName);
    await deleteTopic(kafka, topic);
    out(
      `soak: OK, seed ${options.seed}: ${checks.map((c) => `${c.events} events in ${c.records} records, 0 lost, 0 applied twice`).join("; ")}; ${watch.stalls} stalls of 2 minutes or more (history: "stall")`,
    );
  } else {
    out(`soak: FAILED, seed ${options.seed} (${watch.stalls} stalls of 2 minutes or more)`);
    out(failure!);
    out(`soak: history (JSON lines): ${history.path}; member logs in ${options.runDir}`);
    out(`soak: database ${dbName} and topic ${topic} kept for inspection`);
    out(
      `soak: run it again with SOAK_SEED=${options.seed} SOAK_SECONDS=${options.seconds} SOAK_MEMBERS=${memberCount} SOAK_RATE=${rate} make soak`,
    );
    out("soak: the history's last lines:");
    for (const line of history.tail(30)) out(`  ${line}`);
  }
  return result;
}

/** `url` with its database replaced by `name`. */
function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => c.end());
}

async function deleteTopic(kafka: ReturnType<typeof createKafka>, topic: string): Promise<void> {
  const admin = await testAdmin(BROKERS);
  await admin.deleteTopics([topic]).catch(() => undefined);
  await admin.close();
}

/**
 * Watches the group's progress: every call writes the committed offsets and high watermarks to the
 * history, and a `stall` (once per episode) for a partition whose committed offset has not moved
 * for {@link STALL_MS} while it had lag. A stall is reported, not failed: faults legitimately stop
 * a partition for a while (a frozen member, a broker restarting, a replay), and the checker's lag-0
 * wait fails a partition that never comes back.
 */
class ProgressWatch {
  readonly #last = new Map<number, { offset: string; since: number; reported: boolean }>();
  /** Stall episodes seen. */
  stalls = 0;

  constructor(
    private readonly admin: ClusterAdmin,
    private readonly topic: string,
    private readonly group: string,
    private readonly history: History,
  ) {}

  async snapshot(): Promise<void> {
    try {
      const [ends, committed] = await Promise.all([
        this.admin.topicOffsets(this.topic),
        this.admin.committedOffsets(this.group, [this.topic]),
      ]);
      this.history.write("offsets", {
        highWatermarks: Object.fromEntries(ends.map((e) => [e.partition, e.highWatermark])),
        committed: Object.fromEntries(committed.map((c) => [c.partition, c.offset])),
      });
      const now = Date.now();
      for (const e of ends) {
        const offset = committed.find((c) => c.partition === e.partition)?.offset ?? "-1";
        const last = this.#last.get(e.partition);
        if (last === undefined || last.offset !== offset) {
          this.#last.set(e.partition, { offset, since: now, reported: false });
          continue;
        }
        if (!last.reported && offset !== e.highWatermark && now - last.since > STALL_MS) {
          last.reported = true;
          this.stalls += 1;
          this.history.write("stall", {
            partition: e.partition,
            committed: offset,
            highWatermark: e.highWatermark,
            forMs: now - last.since,
          });
        }
      }
    } catch (error) {
      this.history.write("offsets-error", { error: errorMessage(error) });
    }
  }
}

/**
 * Polls until the group's committed offset is the high watermark on every partition (lag 0).
 * @throws Error naming the lag per partition when `timeoutMs` passes.
 */
async function waitForLagZero(
  admin: ClusterAdmin,
  topic: string,
  group: string,
  timeoutMs: number,
  history: History,
): Promise<void> {
  const started = Date.now();
  let last = "";
  try {
    await waitFor(
      `lag 0 of group ${group} on ${topic}`,
      async () => {
        const [ends, committed] = await Promise.all([
          admin.topicOffsets(topic),
          admin.committedOffsets(group, [topic]),
        ]);
        const lag = ends.map((e) => {
          const c = committed.find((x) => x.partition === e.partition)?.offset ?? "-1";
          return {
            partition: e.partition,
            lag:
              c === "-1"
                ? BigInt(e.highWatermark) - BigInt(e.logStartOffset)
                : BigInt(e.highWatermark) - BigInt(c),
          };
        });
        last = lag.map((l) => `${l.partition}:${l.lag}`).join(" ");
        return lag.every((l) => l.lag === 0n) ? true : undefined;
      },
      timeoutMs,
      1000,
    );
  } catch (error) {
    history.write("lag-timeout", { lag: last, timeoutMs });
    throw new Error(`${errorMessage(error)} (lag per partition: ${last}): a partition stopped`, {
      cause: error,
    });
  }
  history.write("lag-zero", { ms: Date.now() - started });
}

async function runCheck(
  kafka: ReturnType<typeof createKafka>,
  admin: ClusterAdmin,
  pool: pg.Pool,
  topic: string,
  acked: ReadonlySet<string>,
  history: History,
): Promise<CheckResult> {
  const log = await readLog(kafka, admin, topic);
  const result = check(log, await readDatabase(pool, topic), acked);
  history.write("check", {
    ...brief(result),
    accountAnomalies: result.accountAnomalies,
    orderAnomalies: result.orderAnomalies,
    lostSample: result.lostSample,
    lateSample: result.lateSample,
    highWatermarks: log.highWatermarks,
  });
  return result;
}

/** The counts of a check, for the history. */
function brief(c: CheckResult): Record<string, unknown> {
  return {
    ok: c.ok,
    records: c.records,
    events: c.events,
    accounts: c.accounts,
    orders: c.orders,
    lost: c.lost,
    appliedTwice: c.appliedTwice,
    unexplainedAccounts: c.unexplainedAccounts,
    appliedLate: c.appliedLate,
    deadLetters: c.deadLetters,
    kafkaLost: c.kafkaLost,
    conflicting: c.conflicting,
  };
}

/** One line per finding of a failed check. */
function describe(c: CheckResult): string {
  const lines = [
    `${c.lost} lost, ${c.appliedTwice} applied twice, ${c.unexplainedAccounts} accounts unexplained, ${c.appliedLate} applied late, ${c.deadLetters} dead letters, ${c.orderAnomalies.length} orders wrong (of ${c.events} events in ${c.records} records)`,
  ];
  for (const a of c.accountAnomalies.slice(0, 10))
    lines.push(
      `  account ${a.account}: expected ${a.expected}, actual ${a.actual}; lost [${a.lost.join(", ")}], doubled [${a.doubled.join(", ")}]${a.unexplained ? ", unexplained" : ""}`,
    );
  for (const o of c.orderAnomalies.slice(0, 10))
    lines.push(`  order ${o.order}: expected ${o.expected}, actual ${o.actual}`);
  for (const l of c.lostSample.slice(0, 10)) lines.push(`  lost event ${l.id} at ${l.partition}:${l.offset}`);
  for (const l of c.lateSample.slice(0, 10))
    lines.push(`  event ${l.id} first at ${l.first}, applied at ${l.recorded}`);
  return lines.join("\n");
}
