/**
 * `make demo`: the end-to-end run on real input (see docs/demo.md).
 *
 * 800 real GitHub events (data/github-events/, with 10% re-sent duplicates) and a synthetic ledger
 * stream (with duplicates) go to topics of 3 partitions; each projection's consumer group runs as
 * two `replayable run` processes until the lag is 0. Then the group is stopped, its committed
 * offsets are reset to the earliest, it runs again, and the derived tables must be unchanged
 * while every re-read record is counted as a duplicate. Last, a blue/green rebuild of the
 * (versioned) github projection to a changed version (examples/github-new-column/, a new column)
 * while version 1 keeps running: rebuild --blue-green, the new version reads the whole topic,
 * promote --allow-different, rollback, promote again, drop-version 1. Every check is printed; the
 * exit code is 1 when one fails. Every process started here is stopped on the way out, also on
 * failure.
 *
 * Environment: DATABASE_URL (a database on the server where the demo's database is dropped and
 * created), REPLAYABLE_DEMO_DATABASE (that database's name, default `replayable_demo`), KAFKA_BROKERS.
 * Two demos on one PostgreSQL server need two names: a demo holds an advisory lock on its
 * database's name for its whole run, and a second one with the same name stops at once (exit 2)
 * instead of dropping the first one's database. Member logs go to .data/demo/<database>/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createWriteStream, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { count } from "drizzle-orm";
import { loadConfig, redactUrl } from "../src/config.js";
import { connectionConfig, createPool, drizzleOf } from "../src/db/pool.js";
import { errorMessage } from "../src/errors.js";
import { deadLetters } from "../src/db/schema.js";
import { KafkaAdmin } from "../src/kafka/admin.js";
import { createKafka } from "../src/kafka/client.js";
import { createLogger } from "../src/logger.js";
import { offsetDistance } from "../src/offsets.js";
import { readGithubState, type GithubState } from "../src/projections/github/checksum.js";
import { readLedgerState } from "../src/projections/ledger/checksum.js";
import { formatTable } from "../src/text/textTable.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const BIN = join(ROOT, "bin", "replayable.js");
const GITHUB_FILE = "data/github-events/2021-07-21-gharchive-800.jsonl";
/** The changed github projection the blue/green part deploys as version 2. */
const CHANGED_GITHUB_CONFIG = "examples/github-new-column/replayable.config.ts";
const DEMO_DATABASE = demoDatabaseName(process.env.REPLAYABLE_DEMO_DATABASE);
const PARTITIONS = 3;
const MEMBERS = 2;
const GITHUB_DUPLICATE_RATE = "0.1";
const LEDGER_RECORDS = "2000";
const LEDGER_DUPLICATE_RATE = "0.1";
const SEED = "7";
const WAIT_MS = 90_000;

const started = Date.now();
const runId = `${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}-${process.pid}`;
const logDir = join(ROOT, ".data", "demo", DEMO_DATABASE, runId);
const brokers = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const demoUrl = (() => {
  const url = new URL(serverUrl);
  url.pathname = `/${DEMO_DATABASE}`;
  return url.toString();
})();

/** One projection's part of the demo: its topic, consumer group and expected counts. */
interface Stream {
  readonly projection: "github" | "ledger";
  readonly topic: string;
  /** The group given to `migrate` and `rebuild --blue-green` (a versioned projection's base). */
  readonly baseGroup: string;
  /** The group its members join: github is versioned, so version 1's `<baseGroup>-v1`. */
  readonly group: string;
  records: number;
  events: number;
  duplicates: number;
  /** What `produce` printed: the checksum the derived tables must have. */
  checksum: string;
}

const streams: Stream[] = (["github", "ledger"] as const).map((projection) => ({
  projection,
  topic: `demo-${projection}-events-${runId}`,
  baseGroup: `demo-${projection}-${runId}`,
  group: `demo-${projection}-${runId}${projection === "github" ? "-v1" : ""}`,
  records: 0,
  events: 0,
  duplicates: 0,
  checksum: "",
}));

// ---------------------------------------------------------------- output and checks

function elapsed(): string {
  return `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;
}

function step(message: string): void {
  process.stdout.write(`[${elapsed()}] ${message}\n`);
}

function table(rows: readonly (readonly (string | number)[])[]): void {
  for (const line of formatTable(rows, { indent: "  ", numbersRight: true }))
    process.stdout.write(`${line}\n`);
}

const checks: { ok: boolean; text: string }[] = [];

function check(ok: boolean, text: string): void {
  checks.push({ ok, text });
}

/** A fault that ends the demo early: the message says what did not happen. */
class DemoFailure extends Error {}

// ---------------------------------------------------------------- processes

const children = new Set<ChildProcess>();

/** Runs `replayable <args>` to completion; throws with its stderr when it exits non-zero. */
async function cli(args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  const [code] = (await once(child, "exit")) as [number | null];
  children.delete(child);
  if (code !== 0) {
    throw new DemoFailure(`replayable ${args.slice(0, 2).join(" ")} exited ${code}:\n${err.trim()}`);
  }
  return out;
}

/** A `replayable run` process: one member of a projection's consumer group. */
class Member {
  readonly child: ChildProcess;
  readonly logFile: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private log = "";

  /**
   * @param version for the versioned github projection: the version to run and the config file
   *   that declares its code (default: the live version, the shipped code); a member of a version
   *   joins that version's group.
   */
  constructor(
    readonly name: string,
    readonly stream: Stream,
    pass: number,
    version?: { readonly number: number; readonly config: string },
  ) {
    this.logFile = join(logDir, `${name}-run${pass}.log`);
    const file = createWriteStream(this.logFile);
    const which =
      version === undefined
        ? stream.projection === "github"
          ? []
          : ["--group", stream.group]
        : ["--version", String(version.number), "--config", version.config];
    this.child = spawn(
      process.execPath,
      [
        BIN,
        "run",
        "--projection",
        stream.projection,
        "--topic",
        stream.topic,
        ...which,
        "--database-url",
        demoUrl,
        "--metrics-port",
        "0", // a free port of the OS's choosing, read back from the log
        "--no-migrate",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: "info", REPLAYABLE_SHUTDOWN_TIMEOUT_MS: "20000" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.add(this.child);
    for (const out of [this.child.stdout!, this.child.stderr!]) {
      out.setEncoding("utf8").on("data", (d: string) => {
        this.log += d;
        file.write(d);
      });
    }
    this.exited = once(this.child, "exit").then(([code, signal]) => {
      children.delete(this.child);
      file.end();
      return { code: code as number | null, signal: signal as NodeJS.Signals | null };
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The /metrics port, from the member's "serving /metrics" log line. */
  get port(): number | undefined {
    const m = /"port":(\d+),"msg":"serving \/metrics/.exec(this.log);
    return m ? Number(m[1]) : undefined;
  }

  /** The last lines of the member's log, for an error message. */
  tail(lines = 8): string {
    return this.log.trimEnd().split("\n").slice(-lines).join("\n");
  }

  /** Scrapes the counters of /metrics. */
  async scrape(): Promise<MemberCounts> {
    if (this.port === undefined) throw new DemoFailure(`${this.name} has not opened /metrics`);
    const text = await (await fetch(`http://127.0.0.1:${this.port}/metrics`)).text();
    return {
      applied: sumMetric(text, "replayable_records_applied_total"),
      duplicatesEventId: sumMetric(text, "replayable_duplicates_total", 'key="event_id"'),
      duplicatesOffset: sumMetric(text, "replayable_duplicates_total", 'key="offset"'),
      deadLettered: sumMetric(text, "replayable_records_dead_lettered_total"),
      partitions: sumMetric(text, "replayable_assigned_partitions"),
    };
  }

  /** SIGTERM, then waits for the graceful stop; returns the exit code. */
  async stop(): Promise<number | null> {
    if (this.running) this.child.kill("SIGTERM");
    const { code, signal } = await this.exited;
    return signal === null ? code : 128;
  }
}

/** Counters scraped from one member's /metrics. */
interface MemberCounts {
  applied: number;
  duplicatesEventId: number;
  duplicatesOffset: number;
  deadLettered: number;
  partitions: number;
}

function sumMetric(text: string, name: string, label = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-z_:][a-z0-9_:]*)(\{[^}]*\})? (\S+)$/i.exec(line);
    if (m?.[1] === name && (m[2] ?? "").includes(label)) sum += Number(m[3]);
  }
  return sum;
}

function total(counts: readonly MemberCounts[], key: keyof MemberCounts): number {
  return counts.reduce((n, c) => n + c[key], 0);
}

/** Polls `probe` until it returns true; fails after `timeoutMs`, or at once when a member exits. */
async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  members: readonly Member[],
  timeoutMs = WAIT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = members.find((m) => !m.running);
    if (dead) {
      throw new DemoFailure(`${dead.name} exited while waiting for ${what}; its log ends:\n${dead.tail()}`);
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline)
      throw new DemoFailure(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(250);
  }
}

/** Waits until each group is Stable with its {@link MEMBERS} members. */
async function groupsFormed(admin: KafkaAdmin, members: readonly Member[]): Promise<void> {
  for (const s of streams) {
    await waitUntil(
      `${MEMBERS} members in group ${s.group}`,
      async () => {
        const g = await admin.describeGroup(s.group);
        return g.state === "Stable" && g.members.length === MEMBERS;
      },
      members,
    );
  }
}

function startMembers(pass: number): Member[] {
  return streams.flatMap((s) =>
    Array.from({ length: MEMBERS }, (_, i) => new Member(`${s.projection}-${i + 1}`, s, pass)),
  );
}

async function stopMembers(members: readonly Member[]): Promise<void> {
  const codes = await Promise.all(members.map((m) => m.stop()));
  members.forEach((m, i) =>
    check(codes[i] === 0, `${m.name} stopped on SIGTERM with exit code ${codes[i]} (want 0)`),
  );
}

// ---------------------------------------------------------------- Kafka and PostgreSQL

/** Records in the topic: the sum over partitions of high watermark minus log start offset. */
async function recordsIn(admin: KafkaAdmin, topic: string): Promise<number> {
  const offsets = await admin.topicOffsets(topic);
  return offsets.reduce((n, p) => n + Number(offsetDistance(p.highWatermark, p.logStartOffset)), 0);
}

/** True when the group has committed the high watermark of every partition (lag 0). */
async function caughtUp(admin: KafkaAdmin, s: Pick<Stream, "topic" | "group">): Promise<boolean> {
  const ends = await admin.topicOffsets(s.topic);
  const committed = await admin.committedOffsets(s.group, [s.topic]);
  return ends.every((e) => {
    const c = committed.find((x) => x.partition === e.partition)?.offset ?? "-1";
    return c === e.highWatermark || (c === "-1" && e.highWatermark === e.logStartOffset);
  });
}

/** What `replayable replay --output json` prints (the fields the demo reads). */
interface ReplayResult {
  outcome: string;
  totals: { duplicates: string; firstApplies: string; skipped: string };
}

/**
 * Resets the group's committed offsets to the earliest offset of every partition of its topic with
 * `replayable replay --to-earliest --execute` (refused while the group has members), and returns
 * what replay predicts from the projection's checkpoints.
 */
async function resetToEarliest(s: Stream): Promise<ReplayResult> {
  const args = ["--group", s.group, "--topic", s.topic, "--projection", s.projection];
  const json = await cli([
    "replay",
    ...args,
    "--to-earliest",
    "--execute",
    "--output",
    "json",
    "--database-url",
    demoUrl,
  ]);
  return JSON.parse(json) as ReplayResult;
}

/**
 * The demo database's name: `replayable_demo`, or REPLAYABLE_DEMO_DATABASE when set. Exits 2 naming
 * the variable when it is not a plain lower-case PostgreSQL identifier (it is put into DROP and
 * CREATE DATABASE as it is).
 */
function demoDatabaseName(given: string | undefined): string {
  if (given === undefined || given === "") return "replayable_demo";
  if (/^[a-z_][a-z0-9_]{0,62}$/.test(given)) return given;
  process.stderr.write(
    `demo: REPLAYABLE_DEMO_DATABASE=${JSON.stringify(given)} is not a plain database name: use lower-case letters, digits and _ (e.g. replayable_demo_2)\n`,
  );
  process.exit(2);
}

/**
 * Takes a session-level advisory lock on the demo database's name on the server, held until the
 * process ends (the session with it): a second demo with the same database would otherwise drop
 * the first one's database mid-run. Exits 2 when another demo holds it.
 */
async function claimDemoDatabase(): Promise<pg.Client> {
  const session = new pg.Client(connectionConfig(serverUrl));
  await session.connect();
  const { rows } = await session.query<{ locked: boolean }>(
    "SELECT pg_try_advisory_lock(hashtext('replayable demo'), hashtext($1)) AS locked",
    [DEMO_DATABASE],
  );
  if (rows[0]?.locked !== true) {
    await session.end();
    process.stderr.write(
      `demo: another demo is running with database ${DEMO_DATABASE} on ${redactUrl(serverUrl)}; wait for it, or run this one with another database: REPLAYABLE_DEMO_DATABASE=${DEMO_DATABASE}_2 make demo\n`,
    );
    process.exit(2);
  }
  return session;
}

async function recreateDatabase(): Promise<void> {
  const admin = new pg.Client(connectionConfig(serverUrl));
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${DEMO_DATABASE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${DEMO_DATABASE}`);
  } finally {
    await admin.end();
  }
}

/** The github tables' content computed straight from the file (JSON.parse, not the projection's code). */
function githubStateFromFile(): { repoActivity: Map<string, bigint>; actorPushes: Map<string, string> } {
  const repoActivity = new Map<string, bigint>();
  const actorPushes = new Map<string, [bigint, bigint]>();
  for (const line of readFileSync(join(ROOT, GITHUB_FILE), "utf8").split("\n")) {
    if (line === "") continue;
    const e = JSON.parse(line) as { type: string; repo: string; actor: string; payload: { size?: number } };
    const key = `${e.repo} ${e.type}`;
    repoActivity.set(key, (repoActivity.get(key) ?? 0n) + 1n);
    if (e.type === "PushEvent") {
      const [pushes, commits] = actorPushes.get(e.actor) ?? [0n, 0n];
      actorPushes.set(e.actor, [pushes + 1n, commits + BigInt(e.payload.size ?? 0)]);
    }
  }
  return {
    repoActivity,
    actorPushes: new Map([...actorPushes].map(([actor, [p, c]]) => [actor, `${p} ${c}`])),
  };
}

/**
 * The newest `created_at` per (repo, event type) straight from the file (JSON.parse and
 * Date.parse, not the changed projection's code), in ms since 1970, keyed `<repo> <type>`.
 */
function newestEventFromFile(): Map<string, number> {
  const newest = new Map<string, number>();
  for (const line of readFileSync(join(ROOT, GITHUB_FILE), "utf8").split("\n")) {
    if (line === "") continue;
    const e = JSON.parse(line) as { type: string; repo: string; created_at: string };
    const key = `${e.repo} ${e.type}`;
    newest.set(key, Math.max(newest.get(key) ?? -Infinity, Date.parse(e.created_at)));
  }
  return newest;
}

function sameMaps<V>(a: ReadonlyMap<string, V>, b: ReadonlyMap<string, V>): number {
  let differing = 0;
  for (const key of new Set([...a.keys(), ...b.keys()])) if (a.get(key) !== b.get(key)) differing += 1;
  return differing;
}

/** Prints rows and totals per derived table. */
async function printTables(db: ReturnType<typeof drizzleOf>): Promise<GithubState> {
  const github = await readGithubState(db);
  const ledger = await readLedgerState(db);
  const sum = (xs: Iterable<bigint>) => [...xs].reduce((n, x) => n + x, 0n);
  const orders = [...ledger.orders.values()];
  table([
    ["table", "rows", "totals"],
    [
      "github.github_repo_activity",
      github.repoActivity.length,
      `events ${sum(github.repoActivity.map((r) => r.events))} over ${new Set(github.repoActivity.map((r) => r.repo)).size} repos`,
    ],
    [
      "github.github_actor_pushes",
      github.actorPushes.length,
      `pushes ${sum(github.actorPushes.map((a) => a.pushes))}, commits ${sum(github.actorPushes.map((a) => a.commits))}`,
    ],
    ["ledger.ledger_accounts", ledger.balances.size, `balance sum ${sum(ledger.balances.values())} cents`],
    [
      "ledger.ledger_orders",
      ledger.orders.size,
      `paid ${orders.filter((s) => s === "paid").length}, shipped ${orders.filter((s) => s === "shipped").length}`,
    ],
  ]);
  return github;
}

/**
 * Each member's counters from its /metrics; "assigned now" is the partitions it holds at the
 * scrape, not those it applied during the run (the group may have moved them since).
 */
function printMembers(members: readonly Member[], counts: readonly MemberCounts[]): void {
  table([
    ["member", "assigned now", "applied", "duplicates(event_id)", "duplicates(offset)", "dead-lettered"],
    ...members.map((m, i) => {
      const c = counts[i]!;
      return [m.name, c.partitions, c.applied, c.duplicatesEventId, c.duplicatesOffset, c.deadLettered];
    }),
  ]);
}

/** What `replayable checksum --output json` prints. */
interface Checksums {
  tables: { table: string; rows: string; md5: string }[];
  stateChecksum: string;
}

/** `replayable checksum --output json` of each projection: table checksums and the state checksum. */
async function checksums(): Promise<Map<string, Checksums>> {
  const out = new Map<string, Checksums>();
  await Promise.all(
    streams.map(async (s) => {
      const json = await cli([
        "checksum",
        "--projection",
        s.projection,
        "--output",
        "json",
        "--database-url",
        demoUrl,
      ]);
      out.set(s.projection, JSON.parse(json) as Checksums);
    }),
  );
  return out;
}

// ---------------------------------------------------------------- the demo

/** The demo, step by step; each step prints what it did and checks what it claims. */
async function demo(admin: KafkaAdmin): Promise<void> {
  printIntro();
  await createDatabaseAndTopics(admin);
  const first = await consumeOnce(admin);
  const before = await checkFirstRun(first);
  await replayFromEarliest(admin, first, before);
  await blueGreen(admin, streams[0]!);
}

/** What the demo does, in three lines. */
function printIntro(): void {
  process.stdout.write(
    `replayable demo: ${GITHUB_FILE} (real GitHub events) and a synthetic ledger stream,\n` +
      `each consumed by a consumer group of ${MEMBERS} \`replayable run\` processes, then replayed from the earliest offset;\n` +
      `last, github is rebuilt blue/green to a changed version (${CHANGED_GITHUB_CONFIG}) and promoted.\n` +
      `  database ${DEMO_DATABASE} (dropped and created), topics ${streams.map((s) => s.topic).join(", ")}\n` +
      `  member logs in ${relative(ROOT, logDir)}/\n\n`,
  );
}

/** The demo's database (github's version 1 included) and its two topics. */
async function createDatabaseAndTopics(admin: KafkaAdmin): Promise<void> {
  await recreateDatabase();
  const [github] = streams as [Stream, Stream];
  // github is versioned: migrate creates its version 1 (schema github_v1, views in schema github),
  // whose group is `<--group>-v1`.
  await cli([
    "migrate",
    "--projection",
    "ledger",
    "github",
    "--group",
    github.baseGroup,
    "--database-url",
    demoUrl,
  ]);
  step(
    `database ${DEMO_DATABASE} created and migrated (github version 1: schema github_v1, group ${github.group})`,
  );
  for (const s of streams) await admin.createTopic(s.topic, PARTITIONS);
  step(`topics created with ${PARTITIONS} partitions each`);
}

/** The members of the first run and their counters after it. */
interface FirstRun {
  readonly members: Member[];
  readonly counts: MemberCounts[];
}

/** The first run: the members join, both streams are produced, the groups reach lag 0. */
async function consumeOnce(admin: KafkaAdmin): Promise<FirstRun> {
  const [github, ledger] = streams as [Stream, Stream];
  // First run: the members join first, then the records arrive.
  const members = startMembers(1);
  await groupsFormed(admin, members);
  step(`consumer groups formed: ${members.map((m) => `${m.name} (:${m.port})`).join(", ")}`);

  const produced = await Promise.all([
    cli([
      "produce",
      "github",
      "--topic",
      github.topic,
      "--file",
      GITHUB_FILE,
      "--duplicate-rate",
      GITHUB_DUPLICATE_RATE,
      "--seed",
      SEED,
      "--json",
    ]),
    cli([
      "produce",
      "ledger",
      "--topic",
      ledger.topic,
      "--count",
      LEDGER_RECORDS,
      "--duplicate-rate",
      LEDGER_DUPLICATE_RATE,
      "--seed",
      SEED,
      "--json",
    ]),
  ]);
  produced.forEach((json, i) => {
    const p = JSON.parse(json) as { records: number; events: number; duplicates: number; checksum: string };
    Object.assign(streams[i]!, {
      records: p.records,
      events: p.events,
      duplicates: p.duplicates,
      checksum: p.checksum,
    });
    step(
      `produced ${streams[i]!.projection}: ${p.records} records = ${p.events} events + ${p.duplicates} re-sent with the same id`,
    );
  });

  for (const s of streams) await waitUntil(`lag 0 on ${s.topic}`, () => caughtUp(admin, s), members);
  // The counters follow each offset commit within a moment: wait for them too.
  let counts: MemberCounts[] = [];
  await waitUntil(
    "the applied counters to reach the number of events",
    async () => {
      counts = await Promise.all(members.map((m) => m.scrape()));
      return streams.every(
        (s) =>
          total(
            counts.filter((_, i) => members[i]!.stream === s),
            "applied",
          ) >= s.events,
      );
    },
    members,
    10_000,
  ).catch(() => undefined);
  step("lag 0 on every partition of both topics");

  return { members, counts };
}

/**
 * The derived tables and the members' counters after the first run, checked against what was
 * produced and against the file; returns the tables' checksums.
 */
async function checkFirstRun(first: FirstRun): Promise<Map<string, Checksums>> {
  const { members, counts } = first;
  const db = drizzleOf(pool);
  process.stdout.write("\nDerived tables after the first run\n");
  const githubState = await printTables(db);
  process.stdout.write("\nMembers, from each process's /metrics\n");
  printMembers(members, counts);
  for (const s of streams) {
    const c = counts.filter((_, i) => members[i]!.stream === s);
    check(
      total(c, "applied") === s.events,
      `${s.projection}: applied ${total(c, "applied")} = ${s.events} events produced`,
    );
    check(
      total(c, "duplicatesEventId") === s.duplicates,
      `${s.projection}: duplicates by event id ${total(c, "duplicatesEventId")} = ${s.duplicates} re-sent by produce`,
    );
    check(
      c.every((x) => x.partitions > 0) && total(c, "partitions") === PARTITIONS,
      `${s.projection}: both members held partitions (${c.map((x) => x.partitions).join(" + ")} of ${PARTITIONS})`,
    );
  }
  const [deadLetterCount] = await db.select({ n: count() }).from(deadLetters);
  check(
    deadLetterCount?.n === 0,
    `no record dead-lettered (replayable.dead_letters has ${deadLetterCount?.n} rows)`,
  );

  const fromFile = githubStateFromFile();
  const activityDiff = sameMaps(
    fromFile.repoActivity,
    new Map(githubState.repoActivity.map((r) => [`${r.repo} ${r.eventType}`, r.events])),
  );
  const pushesDiff = sameMaps(
    fromFile.actorPushes,
    new Map(githubState.actorPushes.map((a) => [a.actor, `${a.pushes} ${a.commits}`])),
  );
  check(
    activityDiff === 0,
    `github_repo_activity = events per (repo, type) counted from the file (${fromFile.repoActivity.size} rows, ${activityDiff} differ)`,
  );
  check(
    pushesDiff === 0,
    `github_actor_pushes = pushes and commits per actor counted from the file (${fromFile.actorPushes.size} rows, ${pushesDiff} differ)`,
  );

  const before = await checksums();
  for (const s of streams) {
    const got = before.get(s.projection)?.stateChecksum;
    check(
      got === s.checksum,
      `${s.projection}: checksum of the tables = the one produce printed (${s.checksum.slice(0, 12)}…)`,
    );
  }

  return before;
}

/** The replay: the groups stopped, reset to the earliest offsets, run again; nothing may change. */
async function replayFromEarliest(
  admin: KafkaAdmin,
  first: FirstRun,
  before: Map<string, Checksums>,
): Promise<void> {
  // Replay: stop the group, reset it to the earliest offsets, run it again.
  process.stdout.write("\nReplay\n");
  await stopMembers(first.members);
  step(`stopped the ${first.members.length} members (SIGTERM)`);
  for (const s of streams) {
    await waitUntil(
      `group ${s.group} to be empty`,
      async () => (await admin.describeGroup(s.group)).members.length === 0,
      [],
    );
  }
  step("both groups are empty");
  const replays = await Promise.all(streams.map((s) => resetToEarliest(s)));
  const reread = new Map<Stream, number>();
  for (const [i, s] of streams.entries()) {
    const r = replays[i]!;
    reread.set(s, await recordsIn(admin, s.topic));
    check(
      r.outcome === "executed" &&
        Number(r.totals.duplicates) === reread.get(s) &&
        r.totals.firstApplies === "0" &&
        r.totals.skipped === "0",
      `${s.projection}: replay --to-earliest executed, predicting ${r.totals.duplicates} duplicates (${reread.get(s)} records in the topic), ${r.totals.firstApplies} first applies, ${r.totals.skipped} skipped`,
    );
  }
  step(
    `\`replayable replay --to-earliest --execute\` reset both groups: ${streams.map((s) => `${reread.get(s)} ${s.projection} records`).join(" and ")} to re-read`,
  );
  const members = startMembers(2);
  // Every member joins before the lag is awaited (as in the first run): on a loaded machine
  // starting four processes took most of the lag's wait; and a member that would join after the
  // other one has re-read everything must still join before it is stopped.
  await groupsFormed(admin, members);
  for (const s of streams)
    await waitUntil(`lag 0 on ${s.topic} after the reset`, () => caughtUp(admin, s), members);
  let counts: MemberCounts[] = [];
  await waitUntil(
    "the duplicate counters to reach the records re-read",
    async () => {
      counts = await Promise.all(members.map((m) => m.scrape()));
      return streams.every((s) => {
        const c = counts.filter((_, i) => members[i]!.stream === s);
        return (
          total(c, "duplicatesOffset") + total(c, "duplicatesEventId") + total(c, "applied") >= reread.get(s)!
        );
      });
    },
    members,
    10_000,
  ).catch(() => undefined);
  step("lag 0 again; both groups have their 2 members");
  process.stdout.write("\nMembers of the second run, from /metrics\n");
  printMembers(members, counts);
  const after = await checksums();
  process.stdout.write(
    "\nDerived tables before and after the replay (`replayable checksum --output json`)\n",
  );
  table([
    ["table", "rows before", "rows after", "md5 before", "md5 after"],
    ...streams.flatMap((s) =>
      before.get(s.projection)!.tables.map((t, i) => {
        const a = after.get(s.projection)!.tables[i];
        return [t.table, Number(t.rows), Number(a?.rows ?? NaN), t.md5, a?.md5 ?? "-"];
      }),
    ),
  ]);
  for (const s of streams) {
    const c = counts.filter((_, i) => members[i]!.stream === s);
    const r1 = first.counts.filter((_, i) => first.members[i]!.stream === s);
    const dupBefore = total(r1, "duplicatesEventId") + total(r1, "duplicatesOffset");
    const dupRun2 = total(c, "duplicatesEventId") + total(c, "duplicatesOffset");
    // Every record handed to a member is applied, a duplicate or dead-lettered; more than the
    // records in the topic only if a rebalance made a member re-read a batch whose commit it skipped.
    const handed = dupRun2 + total(c, "applied") + total(c, "deadLettered");
    check(
      handed >= reread.get(s)!,
      `${s.projection}: every record re-read (${handed} records handed to the members, ${reread.get(s)} in the topic)`,
    );
    check(
      dupRun2 === handed,
      `${s.projection}: duplicates rose by exactly the records re-read: ${dupBefore} -> ${dupBefore + dupRun2} (+${dupRun2}), applied +${total(c, "applied")}, dead-lettered +${total(c, "deadLettered")}`,
    );
    check(
      JSON.stringify(after.get(s.projection)) === JSON.stringify(before.get(s.projection)),
      `${s.projection}: every derived table unchanged by the replay (row counts and MD5 before = after)`,
    );
  }
  await stopMembers(members);
  step(`stopped the ${members.length} members (SIGTERM)`);
}

// ---------------------------------------------------------------- blue/green rebuild of github

/** `replayable <args>` as the demo prints it: without the connection flag every command has. */
function shown(args: readonly string[]): string {
  const i = args.indexOf("--database-url");
  const rest = i < 0 ? args : [...args.slice(0, i), ...args.slice(i + 2)];
  return `replayable ${rest.join(" ")}`;
}

/** Runs `replayable <args>` and prints the command and its output, indented. */
async function cliShown(args: readonly string[]): Promise<string> {
  const out = await cli(args);
  process.stdout.write(`  $ ${shown(args)}\n`);
  for (const line of out.trimEnd().split("\n")) process.stdout.write(`    ${line}\n`);
  return out;
}

/** A promote's or rollback's comparison per table, from its audit row: version → rows and md5. */
interface AuditedTable {
  table: string;
  live: { rows: string; md5: string } | null;
  candidate: { rows: string; md5: string } | null;
  equal: boolean;
}

/** The checksums the newest promote of github recorded (replayable.projection_version_audit). */
async function lastPromoteChecksums(): Promise<AuditedTable[]> {
  const r = await pool.query<{ checksums: AuditedTable[] }>(
    "SELECT checksums FROM replayable.projection_version_audit WHERE projection = 'github' AND action = 'promote' ORDER BY id DESC LIMIT 1",
  );
  return r.rows[0]?.checksums ?? [];
}

/** The columns of the view `github.github_repo_activity`, in order. */
async function activityColumns(): Promise<string[]> {
  const r = await pool.query<{ column_name: string }>(
    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'github' AND table_name = 'github_repo_activity' ORDER BY ordinal_position",
  );
  return r.rows.map((c) => c.column_name);
}

/**
 * `checksum --projection github --output json` (the shipped projection: it reads the views, and
 * its state checksum covers the counts every version has).
 */
async function githubChecksum(): Promise<Checksums> {
  const json = await cli([
    "checksum",
    "--projection",
    "github",
    "--output",
    "json",
    "--database-url",
    demoUrl,
  ]);
  return JSON.parse(json) as Checksums;
}

/** True when each table of `sums` (`github.<t>`) has the rows and md5 `side` of the audit has. */
function sameAs(sums: Checksums, audited: readonly AuditedTable[], side: "live" | "candidate"): boolean {
  return (
    sums.tables.length === audited.length &&
    sums.tables.every((t) => {
      const a = audited.find((x) => `github.${x.table}` === t.table || x.table === t.table)?.[side];
      return a !== undefined && a !== null && a.rows === t.rows && a.md5 === t.md5;
    })
  );
}

/** Checks the views after the promote: the new column equals the file's newest `created_at`. */
async function checkNewColumn(github: Stream): Promise<void> {
  const rows = await pool.query<{ repo: string; event_type: string; last_event_at: Date | null }>(
    "SELECT repo, event_type, last_event_at FROM github.github_repo_activity",
  );
  const fromFile = newestEventFromFile();
  const differ = sameMaps(
    fromFile,
    new Map(rows.rows.map((r) => [`${r.repo} ${r.event_type}`, r.last_event_at?.getTime()])),
  );
  check(
    differ === 0,
    `github (version 2, promoted): the view github.github_repo_activity has the new column last_event_at = the newest created_at per (repo, type) from the file (${fromFile.size} rows, ${differ} differ)`,
  );
  const sums = await githubChecksum();
  check(
    sums.stateChecksum === github.checksum,
    `github (version 2): its counts in the views still have the checksum produce printed (${github.checksum.slice(0, 12)}…)`,
  );
  const audited = await lastPromoteChecksums();
  check(
    sameAs(sums, audited, "candidate"),
    "github: the views' row counts and MD5 (checksum) = version 2's recorded by promote",
  );
  process.stdout.write("\nPromoted checksums (`replayable checksum --projection github`, the views)\n");
  table([["table", "rows", "md5"], ...sums.tables.map((t) => [t.table, Number(t.rows), t.md5])]);
}

/** `promote --version 2 --allow-different` and its checks; returns nothing, prints the output. */
async function promoteVersion2(github: Stream, again: boolean): Promise<void> {
  const out = await cliShown([
    "promote",
    "--projection",
    "github",
    "--version",
    "2",
    "--topic",
    github.topic,
    "--allow-different",
    "--config",
    CHANGED_GITHUB_CONFIG,
    "--database-url",
    demoUrl,
  ]);
  const differ = /tables that differ from version 1: (.*)$/m.exec(out)?.[1] ?? "";
  check(
    out.includes("Promoted projection github: version 2 is live (was 1)") &&
      differ.split(", ").includes("github_repo_activity") &&
      !differ.includes("github_actor_pushes"),
    `github: promote${again ? " (again, after the rollback)" : ""} --allow-different made version 2 live, printing github_repo_activity as different and github_actor_pushes as equal`,
  );
  check(
    (await activityColumns()).includes("last_event_at"),
    "github: the view github.github_repo_activity has the column last_event_at",
  );
}

/** `rollback`: version 1's views again, without the new column, with version 1's checksums. */
async function rollbackToVersion1(): Promise<void> {
  const out = await cliShown([
    "rollback",
    "--projection",
    "github",
    "--config",
    CHANGED_GITHUB_CONFIG,
    "--database-url",
    demoUrl,
  ]);
  const columns = await activityColumns();
  const sums = await githubChecksum();
  check(
    out.includes("Rolled back projection github: version 1 is live (was 2)") &&
      !columns.includes("last_event_at") &&
      sameAs(sums, await lastPromoteChecksums(), "live"),
    `github: rollback made version 1 live again: the view has no last_event_at (columns ${columns.join(", ")}) and version 1's checksums`,
  );
}

/**
 * The blue/green part: version 1 of github runs (live) while version 2, the changed projection of
 * examples/github-new-column/, is created, reads the whole topic, and is promoted.
 */
async function blueGreen(admin: KafkaAdmin, github: Stream): Promise<void> {
  process.stdout.write(
    `\nBlue/green rebuild of github to a changed version (${CHANGED_GITHUB_CONFIG}: a new column last_event_at)\n`,
  );
  const live = new Member("github-v1", github, 3);
  await waitUntil(
    `version 1's member in group ${github.group}`,
    async () => (await admin.describeGroup(github.group)).state === "Stable",
    [live],
  );
  step(`version 1 (live) runs: ${live.name} in group ${github.group}`);
  const rebuild = ["rebuild", "--projection", "github", "--group", github.baseGroup, "--topic", github.topic];
  const changed = ["--blue-green", "--config", CHANGED_GITHUB_CONFIG, "--database-url", demoUrl];
  await cliShown([...rebuild, ...changed]);
  // --no-run: the new version's member runs as a process of its own, as a deployment runs it (without
  // it, rebuild --execute would go on as that member itself).
  await cliShown([...rebuild, ...changed, "--execute", "--no-run"]);
  const shadow = new Member("github-v2", github, 1, { number: 2, config: CHANGED_GITHUB_CONFIG });
  const v2 = { topic: github.topic, group: `${github.baseGroup}-v2` };
  await waitUntil(`version 2 to read the whole topic`, () => caughtUp(admin, v2), [live, shadow]);
  step(`version 2 read the whole topic (group ${v2.group}) while version 1 kept serving`);
  await cliShown(["status", "--projection", "github", "--topic", github.topic, ...changed.slice(1)]);
  await promoteVersion2(github, false);
  await checkNewColumn(github);
  process.stdout.write("\n");
  await rollbackToVersion1();
  await promoteVersion2(github, true);
  await stopMembers([live]);
  await waitUntil(
    `group ${github.group} to be empty`,
    async () => (await admin.describeGroup(github.group)).members.length === 0,
    [],
  );
  step("stopped version 1's member");
  const drop = ["drop-version", "--projection", "github", "--version", "1", ...changed.slice(1)];
  const dryRun = await cliShown(drop);
  const kept = await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = 'github_v1'");
  check(
    dryRun.includes("Dry run: would drop version 1") && kept.rowCount === 1,
    "github: drop-version 1 without --execute printed what it would delete and kept schema github_v1",
  );
  await cliShown([...drop, "--execute"]);
  const v1 = await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = 'github_v1'");
  const states = await pool.query<{ version: number; state: string }>(
    "SELECT version, state FROM replayable.projection_versions WHERE projection = 'github' ORDER BY version",
  );
  check(
    v1.rowCount === 0 && states.rows.map((r) => `${r.version} ${r.state}`).join(", ") === "1 dropped, 2 live",
    `github: drop-version 1 removed schema github_v1; versions: ${states.rows.map((r) => `${r.version} ${r.state}`).join(", ")}`,
  );
  await stopMembers([shadow]);
  step("stopped version 2's member");
}

let admin: KafkaAdmin | undefined;
const pool = createPool({ connectionString: demoUrl, max: 2 });

/** Stops every process this demo started (SIGTERM, then SIGKILL after 25 s) and deletes its topics. */
async function cleanUp(): Promise<void> {
  const live = [...children];
  for (const child of live) child.kill("SIGTERM");
  const timer = setTimeout(() => live.forEach((c) => c.kill("SIGKILL")), 25_000);
  await Promise.all(
    live.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => once(c, "exit")),
  );
  clearTimeout(timer);
  await pool.end().catch(() => undefined);
  if (admin !== undefined) {
    const existing = await admin.listTopics().catch(() => [] as string[]);
    const ours = streams.map((s) => s.topic).filter((t) => existing.includes(t));
    if (ours.length > 0) await admin.deleteTopics(ours).catch(() => undefined);
    await admin.close().catch(() => undefined);
  }
}

let cleaning: Promise<void> | undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    process.stderr.write(`\ndemo: ${signal}: stopping the processes it started\n`);
    cleaning ??= cleanUp();
    void cleaning.finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  });
}

const claim = await claimDemoDatabase();
// Logs of earlier runs with this database go; this run's stay until the next one.
rmSync(dirname(logDir), { recursive: true, force: true });
mkdirSync(logDir, { recursive: true });
let failure: unknown;
try {
  admin = await KafkaAdmin.connect(
    createKafka({
      brokers,
      clientId: "replayable-demo",
      log: createLogger("error"),
      security: loadConfig(process.env).kafka.security,
    }),
  );
  await demo(admin);
} catch (error) {
  failure = error;
} finally {
  cleaning ??= cleanUp();
  await cleaning;
  await claim.end().catch(() => undefined);
}

if (checks.length > 0) process.stdout.write("\nChecks\n");
for (const c of checks) process.stdout.write(`  ${c.ok ? "ok  " : "FAIL"}  ${c.text}\n`);
const failed = checks.filter((c) => !c.ok);
const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (failure !== undefined) {
  process.stdout.write(`\ndemo FAILED after ${seconds} s: ${errorMessage(failure)}\n`);
  if (/ECONNREFUSED|Connection error|connect/i.test(errorMessage(failure))) {
    process.stdout.write(
      `  Kafka at ${brokers.join(",")} and PostgreSQL at ${redactUrl(serverUrl)} must answer: \`make demo\` starts them (\`make up\`).\n`,
    );
  } else if (failure instanceof TypeError || failure instanceof ReferenceError) {
    process.stderr.write(`${failure.stack}\n`);
  }
  process.exit(1);
}
if (failed.length > 0) {
  process.stdout.write(
    `\ndemo FAILED after ${seconds} s: ${failed.length} of ${checks.length} checks failed (FAIL above); member logs in ${relative(ROOT, logDir)}/\n`,
  );
  process.exit(1);
}
process.stdout.write(
  `\ndemo passed: ${checks.length} checks in ${seconds} s. The tables stay in database ${DEMO_DATABASE}; try\n` +
    `  ./bin/replayable.js checksum --projection github --database-url ${redactUrl(demoUrl)}\n` +
    `  psql ${redactUrl(demoUrl)} -c 'SELECT * FROM github.github_repo_activity ORDER BY last_event_at DESC LIMIT 5'\n`,
);
