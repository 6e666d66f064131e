/**
 * `replayable dead-letters list|show|retry|discard`: inspect the records the consumer could not
 * apply, re-apply them through the same dedupe transaction once the cause is fixed, or resolve
 * them without applying. `retry` and `discard` are dry runs unless `--execute` is given.
 */
import { hostname, userInfo } from "node:os";
import { Command, Option } from "commander";
import type pg from "pg";
import type { Logger } from "pino";
import type { Config } from "../../config.js";
import type { Projection } from "../../projection.js";
import { createPool } from "../../db/pool.js";
import { checkCodeOfVersion } from "../../versions/versionMigrations.js";
import { checkDatabase } from "../../db/startupCheck.js";
import { retryDeadLetter, type RetryOutcome } from "../../engine/retryDeadLetter.js";
import { inCommandSpan, type Tracing } from "../../tracing/tracing.js";
import { DEAD_LETTER_CODES, errorMessage, isErrorCode, ReplayableError } from "../../errors.js";
import { scrubSecrets } from "../../secrets/secrets.js";
import { resolveDeadLetter } from "../../sql/resolveDeadLetter.js";
import { laterOffsets } from "../../sql/laterOffsets.js";
import { compareOffsets } from "../../offsets.js";
import { selectDeadLetters, type DeadLetter, type DeadLetterFilter } from "../../sql/selectDeadLetters.js";
import {
  action,
  outputOption,
  cliLogger,
  configFrom,
  intFlag,
  printJson,
  printTable,
  reportedError,
  withConnectionOptions,
  type CliSetup,
  type ConnectionFlags,
} from "../common.js";
import { commandTarget } from "../commandTarget.js";
import { letterJson, listRow, parseTimeFlag, showText } from "../deadLetterOutput.js";
import {
  resolveVersionTarget,
  versionLine,
  versionTargetOption,
  type VersionTarget,
} from "../versionTarget.js";

interface FilterFlags extends ConnectionFlags {
  projection?: string;
  version?: string;
  topic?: string;
  partition?: string;
  code?: string[];
  since?: string;
  until?: string;
  id?: string[];
}

interface ListFlags extends FilterFlags {
  state: string;
  limit: string;
  output: string;
}

interface ChangeFlags extends FilterFlags {
  execute?: boolean;
  outOfOrder?: boolean;
  output: string;
  deleteBytes?: boolean;
}

/** Adds the selection flags every subcommand but `show` takes. */
function withFilters(command: Command): Command {
  return withConnectionOptions(command)
    .option("--projection <name>", "projection (env REPLAYABLE_PROJECTION)")
    .addOption(versionTargetOption())
    .option("--topic <topic>", "only records of this topic")
    .option("--partition <n>", "only records of this partition")
    .option("--code <code...>", "only these error codes (repeatable), e.g. DECODE_FAILED")
    .option("--since <time>", "dead-lettered at or after: ISO-8601 date-time or 15m, 2h, 7d ago")
    .option("--until <time>", "dead-lettered before: ISO-8601 date-time or 15m, 2h, 7d ago")
    .option("--id <id...>", "only these dead letter ids");
}

/**
 * The projection (a versioned one's version: `--version`, default the live one) whose dead letters
 * the command acts on; its line saying which version goes to stdout in table output.
 * @throws ReplayableError CONFIG_INVALID as {@link resolveVersionTarget}.
 */
async function targetOf(
  pool: pg.Pool,
  setup: CliSetup,
  flags: FilterFlags & { output: string },
): Promise<VersionTarget> {
  const chosen = commandTarget(setup);
  const target = await resolveVersionTarget(
    pool,
    chosen.projection,
    flags.version,
    undefined,
    chosen.groupId,
  );
  const line = versionLine(target);
  if (line !== undefined && flags.output !== "json") process.stdout.write(`${line}\n`);
  return target;
}

/**
 * The selection the filter flags make. Each `--code` must be an error code, or a code a dead
 * letter of the projection carries ({@link checkCode}); a repeated `--code` selects every code given.
 * @throws ReplayableError CONFIG_INVALID naming the flag and what is valid.
 */
async function filterFrom(pool: pg.Pool, flags: FilterFlags, projection: string): Promise<DeadLetterFilter> {
  for (const id of flags.id ?? []) {
    if (!isDeadLetterId(id))
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--id: "${id}" is not a dead letter id; ids are whole numbers from 1 to ${MAX_BIGINT}`,
      );
  }
  for (const code of flags.code ?? []) await checkCode(pool, projection, code);
  const since = parseTimeFlag("--since", flags.since);
  const until = parseTimeFlag("--until", flags.until);
  if (since !== undefined && until !== undefined && since >= until) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `--since (${since.toISOString()}) must be before --until (${until.toISOString()})`,
    );
  }
  return {
    projection,
    topic: flags.topic,
    partition:
      flags.partition === undefined
        ? undefined
        : intFlag("--partition", flags.partition, 0, 2_147_483_647, 0),
    codes: flags.code,
    since,
    until,
    ids: flags.id,
  };
}

/**
 * Refuses a `--code` that is no error code unless a dead letter of `projection` carries it (a
 * projection's own PermanentRecordError may use another code): a typo selects nothing otherwise.
 * @throws ReplayableError CONFIG_INVALID naming the code and the codes dead letters carry.
 */
async function checkCode(pool: pg.Pool, projection: string, code: string): Promise<void> {
  if (isErrorCode(code)) return;
  const carried = await pool.query(
    "SELECT 1 FROM replayable.dead_letters WHERE projection = $1 AND error_code = $2 LIMIT 1",
    [projection, code],
  );
  if (carried.rowCount !== 0) return;
  const codes = DEAD_LETTER_CODES.join(", ").replace(/, (?=[A-Z_]+$)/, " or ");
  throw new ReplayableError(
    "CONFIG_INVALID",
    `--code: "${code}" is not an error code; dead letters carry ${codes}, or a code of the projection's own PermanentRecordError (no dead letter of projection ${projection} carries this one)`,
  );
}

/** PostgreSQL's largest `bigint`, the type of `replayable.dead_letters.id`. */
const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** True for the decimal text of a `bigint` id (1 to 2^63 - 1; 19 digits fit, not all of them). */
function isDeadLetterId(id: string): boolean {
  // Leading zeros of any length are the same id; 0 is none (bigserial starts at 1).
  return /^\d+$/.test(id) && BigInt(id) >= 1n && BigInt(id) <= MAX_BIGINT;
}

/**
 * The dead letters `retry` or `discard` act on. Each id named with `--id` must be a dead letter of
 * `projection` (docs/dead-letters.md: NOT_FOUND, exit 1, nothing done); one already resolved is
 * said on stderr and left as it is.
 * @throws ReplayableError NOT_FOUND naming the ids that are no dead letter of the projection.
 */
async function selectNamed(pool: pg.Pool, flags: FilterFlags, projection: string): Promise<DeadLetter[]> {
  const filter = await filterFrom(pool, flags, projection);
  const letters = await selectDeadLetters(pool, filter);
  const named = [...new Set(flags.id ?? [])].map((id) => BigInt(id).toString());
  const chosen = new Set(letters.map((l) => l.id));
  const others = named.filter((id) => !chosen.has(id));
  if (others.length === 0) return letters;
  const existing = await selectDeadLetters(pool, { projection, ids: others, state: "all" });
  const found = new Set(existing.map((l) => l.id));
  const missing = others.filter((id) => !found.has(id));
  if (missing.length > 0)
    throw new ReplayableError(
      "NOT_FOUND",
      `no dead letter with id ${missing.join(", ")} of projection ${projection}; \`replayable dead-letters list ${projectionFlags(projection)} --state all\` shows them`,
    );
  for (const letter of existing)
    process.stderr.write(
      letter.resolution === null
        ? `replayable: dead letter ${letter.id} does not match the other filters; left as it is\n`
        : `replayable: dead letter ${letter.id} is already resolved (${letter.resolution}); left as it is\n`,
    );
  return letters;
}

/** `user@host`, stored as `resolved_by`. */
function operator(): string {
  let user = process.env.USER ?? "unknown";
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container): keep $USER
  }
  return `${user}@${hostname()}`;
}

function outputFlag(): Option {
  return outputOption();
}

function listCommand(): Command {
  return withFilters(new Command("list"))
    .description(
      "list dead letters in the order they were stored, by id (unresolved ones unless --state says otherwise)",
    )
    .addOption(
      new Option("--state <state>", "unresolved, resolved or all")
        .choices(["unresolved", "resolved", "all"])
        .default("unresolved"),
    )
    .option("--limit <n>", "at most this many", "100")
    .addOption(outputFlag())
    .action(action(listAction));
}

/** Prints the dead letters the filters select, at most `--limit` of them. */
async function listAction(flags: ListFlags): Promise<void> {
  const setup = await configFrom(flags, { REPLAYABLE_PROJECTION: flags.projection });
  const { config } = setup;
  const limit = intFlag("--limit", flags.limit, 1, 1_000_000, 100);
  await checkDatabase(config.databaseUrl, []);
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    const { projection } = await targetOf(pool, setup, flags);
    const filter = {
      ...(await filterFrom(pool, flags, projection.name)),
      state: flags.state as DeadLetterFilter["state"],
    };
    const letters = await selectDeadLetters(pool, { ...filter, limit: limit + 1 });
    const shown = letters.slice(0, limit);
    if (flags.output === "json") printJson(shown.map((l) => letterJson(l, false)));
    else {
      printTable(shown.map(listRow));
      if (letters.length > limit)
        process.stdout.write(`(more than ${limit}; raise --limit or narrow the filters)\n`);
    }
  } finally {
    await pool.end();
  }
}

function showCommand(): Command {
  return withConnectionOptions(new Command("show"))
    .description("print one dead letter with its key, value (UTF-8 if valid, else base64) and headers")
    .argument("<id>", "dead letter id (see `dead-letters list`)")
    .option(
      "--projection <name>",
      "only a dead letter of this projection or one of its versions (ids are unique across projections)",
    )
    .addOption(new Option("--output <format>", "text or json").choices(["text", "json"]).default("text"))
    .action(action(showAction));
}

/**
 * Prints one dead letter in full.
 * @throws ReplayableError NOT_FOUND when there is none with `id` (of `--projection`, when given).
 */
async function showAction(
  id: string,
  flags: ConnectionFlags & { output: string; projection?: string },
): Promise<void> {
  if (!isDeadLetterId(id))
    throw new ReplayableError(
      "CONFIG_INVALID",
      `<id>: "${id}" is not a dead letter id; ids are whole numbers from 1 to ${MAX_BIGINT}`,
    );
  const { config } = await configFrom(flags);
  await checkDatabase(config.databaseUrl, []);
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    const [found] = await selectDeadLetters(pool, { ids: [id], state: "all" });
    // A version's letters are kept under its dedupe key, `P@vN` (versionKey): P names them too.
    const named = flags.projection;
    const letter =
      named === undefined ||
      found === undefined ||
      found.projection === named ||
      found.projection.startsWith(`${named}@v`)
        ? found
        : undefined;
    if (letter === undefined)
      throw new ReplayableError(
        "NOT_FOUND",
        `no dead letter with id ${id}${flags.projection === undefined ? "" : ` of projection ${flags.projection}`}`,
      );
    if (flags.output === "json") printJson(letterJson(letter, true));
    else process.stdout.write(showText(letter));
  } finally {
    await pool.end();
  }
}

/**
 * Why a letter of a projection whose last write of a key wins is not retried: `other` offsets
 * after it, below checkpoint `checkpoint`, are not dead letters left unapplied.
 */
function laterText(other: string, checkpoint: string): string {
  const offsets = other === "1" ? "1 offset after it" : `${other} offsets after it`;
  return `${offsets} in its partition (checkpoint ${checkpoint}) hold records applied already or transaction markers, not dead letters, and this projection's last write of a key wins, so it could overwrite a newer value of its key or bring back a deleted row`;
}

function describeOutcome(outcome: RetryOutcome): string {
  switch (outcome.kind) {
    case "failed":
      return `failed again: ${outcome.code}: ${outcome.message}`;
    case "already_resolved":
      return `already resolved (${outcome.resolution})`;
    case "not_found":
      return "not found";
    case "duplicate":
      return "duplicate: the event was applied from another record; resolved";
    case "superseded":
      return `superseded: rebuild ${outcome.rebuildId} handed the record back to the consumer, which reads it again (or, on a compacted topic, the newer record of its key that replaced it); resolved, not applied`;
    case "later_records":
      return `not retried: ${laterText(outcome.other, outcome.checkpoint)}; still unresolved`;
    default:
      return "applied; resolved";
  }
}

function retryCommand(): Command {
  return withFilters(new Command("retry"))
    .description(
      "re-apply unresolved dead letters through the dedupe transaction: applied once and resolved, or attempts + 1 (dry run unless --execute)",
    )
    .option("--execute", "retry them; without it, only list what would be retried")
    .option(
      "--out-of-order",
      "also apply a letter of a projection whose last write of a key wins (the upsert sink) after later records of its partition were applied",
    )
    .addOption(outputFlag())
    .action(action(retryAction));
}

/** Orders letters by topic, partition and offset (numerically). */
function byRecord(a: DeadLetter, b: DeadLetter): number {
  const x = a.record;
  const y = b.record;
  if (x.topic !== y.topic) return x.topic < y.topic ? -1 : 1;
  return x.partition - y.partition || compareOffsets(x.offset, y.offset);
}

/**
 * Tells, after a dry run, which letters `--execute` would not retry now for a projection whose last
 * write of a key wins (read without a lock: a member may change it before then). Letters earlier
 * in the list are counted as unapplied, as they are when `--execute` gets to a letter after them
 * only if they fail again.
 */
async function predictLaterRecords(
  pool: pg.Pool,
  projection: string,
  letters: readonly DeadLetter[],
): Promise<{ id: string; reason: string }[]> {
  const refused: { id: string; reason: string }[] = [];
  for (const letter of letters) {
    const later = await laterOffsets(pool, projection, letter.record, false);
    if (later !== undefined && BigInt(later.other) > 0n)
      refused.push({ id: letter.id, reason: laterText(later.other, later.checkpoint) });
  }
  return refused;
}

/** One retried dead letter: its id, its record as `topic/partition@offset`, and what the retry did. */
interface RetryResult {
  id: string;
  offset: string;
  outcome: RetryOutcome;
}

/** Retries the selected dead letters (or lists them, without `--execute`); exit code 1 if any failed again. */
async function retryAction(flags: ChangeFlags): Promise<void> {
  // Applying records, as `run` does: the config file's tables and sink mappings are checked first.
  const setup = await configFrom(
    flags,
    { REPLAYABLE_PROJECTION: flags.projection },
    { checkTables: flags.execute === true },
  );
  const { config } = setup;
  const log = cliLogger(config);
  await checkDatabase(config.databaseUrl, []);
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    const target = await targetOf(pool, setup, flags);
    const { projection } = target;
    // The privileges to apply, on the tables the retry writes (a version's, in its schema).
    await checkDatabase(config.databaseUrl, flags.execute === true ? ["apply"] : [], projection.tables);
    if (flags.execute === true && target.version !== undefined)
      await checkCodeOfVersion(pool, setup.projection(), target.version.number);
    // In offset order within a partition: a letter retried first is not a later record of another.
    const letters = (await selectNamed(pool, flags, projection.name)).sort(byRecord);
    if (!flags.execute) {
      const held =
        projection.retryAfterLaterRecords === false
          ? await predictLaterRecords(pool, projection.name, letters)
          : [];
      dryRun("retry", letters, flags.output, held);
      return;
    }
    let run: RetryRun;
    try {
      run = await retryLetters(letters, { pool, projection, config, log, flags });
    } catch (error) {
      if (!(error instanceof RetryStopped)) throw error;
      // Printed first: the letters before it were committed, each in its own transaction.
      printRetryResults(error.run, flags.output);
      throw error.run.stopped?.error;
    }
    printRetryResults(run, flags.output);
  } finally {
    await pool.end();
  }
}

/** The flags that name dedupe key `key`: `--projection P --version N` for a version's `P@vN` (versionKey). */
function projectionFlags(key: string): string {
  const version = /^(.+)@v(\d+)$/.exec(key);
  return version === null ? `--projection ${key}` : `--projection ${version[1]} --version ${version[2]}`;
}

/** What {@link retryLetters} needs besides the letters. */
interface RetryContext {
  readonly pool: pg.Pool;
  readonly projection: Projection<unknown>;
  readonly config: Config;
  readonly log: Logger;
  readonly flags: ChangeFlags;
}

/**
 * What {@link retryLetters} did: the outcome of each letter retried, and, when an error (a
 * transient database failure, a lock timeout) stopped it, the letter it stopped at (nothing changed
 * for it: its transaction rolled back) and the letters after it, not tried.
 */
interface RetryRun {
  readonly results: readonly RetryResult[];
  readonly stopped?: { readonly id: string; readonly offset: string; readonly error: unknown };
  readonly notTried: readonly { readonly id: string; readonly offset: string }[];
}

/**
 * Thrown by {@link retryLetters} out of its command span (which then ends with the error's status)
 * when an error stopped the run: what it did so far, and the letter it stopped at.
 */
class RetryStopped extends Error {
  constructor(readonly run: RetryRun & { readonly stopped: NonNullable<RetryRun["stopped"]> }) {
    super(errorMessage(run.stopped.error), { cause: run.stopped.error });
    this.name = "RetryStopped";
  }
}

/** `topic/partition@offset`, as the retry's output names a letter's record. */
function recordOf(letter: DeadLetter): string {
  const { topic, partition, offset } = letter.record;
  return `${topic}/${partition}@${offset}`;
}

/**
 * Retries `letters` one by one, each in a transaction of its own, in one command span. An error
 * stops it at that letter; the letters before it keep their committed outcomes.
 * @throws RetryStopped carrying what the run did, so the caller prints it, then the error.
 */
async function retryLetters(letters: readonly DeadLetter[], ctx: RetryContext): Promise<RetryRun> {
  const { pool, projection, config, log, flags } = ctx;
  const traced = { tracesExporter: config.tracesExporter, log };
  const attributes = { "replayable.projection": projection.name, "replayable.dead_letters": letters.length };
  return inCommandSpan(traced, "dead-letters retry", attributes, async (tracing) => {
    const results: RetryResult[] = [];
    for (const [index, letter] of letters.entries()) {
      let client: pg.PoolClient | undefined;
      try {
        client = await pool.connect();
        const retry = (retryClient: pg.PoolClient) =>
          retryDeadLetter({
            client: retryClient,
            projection,
            id: letter.id,
            maxRecordBytes: config.maxRecordBytes,
            maxRecordHeaders: config.maxRecordHeaders,
            resolvedBy: operator(),
            outOfOrder: flags.outOfOrder === true,
            lockTimeoutMs: config.lockTimeoutMs,
            log,
          });
        const outcome = await tracedRetry(tracing, letter, projection.name, client, retry);
        results.push({ id: letter.id, offset: recordOf(letter), outcome });
      } catch (error) {
        const notTried = letters.slice(index + 1).map((l) => ({ id: l.id, offset: recordOf(l) }));
        throw new RetryStopped({
          results,
          stopped: { id: letter.id, offset: recordOf(letter), error },
          notTried,
        });
      } finally {
        client?.release();
      }
    }
    return { results, notTried: [] };
  });
}

/**
 * One letter's retry, a span of its own with tracing on: linked to the span that produced the
 * original record (its stored `traceparent`), its statements child spans (docs/observability.md).
 */
function tracedRetry(
  tracing: Tracing | undefined,
  letter: DeadLetter,
  projection: string,
  client: pg.PoolClient,
  retry: (client: pg.PoolClient) => Promise<RetryOutcome>,
): Promise<RetryOutcome> {
  if (tracing === undefined) return retry(client);
  return tracing.deadLetterRetry({ id: letter.id, projection, record: letter.record }, client, retry);
}

/**
 * Prints what each retry did and the totals, and where an error stopped the run; sets exit code 1
 * if any failed again or was not retried.
 */
function printRetryResults(run: RetryRun, output: string): void {
  const { results, stopped, notTried } = run;
  // As the error is printed (secrets scrubbed); table cells are made terminal-safe by printTable.
  const stoppedMessage =
    stopped === undefined ? "" : scrubSecrets(errorMessage(reportedError(stopped.error)));
  const count = (kind: RetryOutcome["kind"]) => results.filter((r) => r.outcome.kind === kind).length;
  const failed = count("failed");
  const later = count("later_records");
  // Retried: the letters whose record went through the projection's apply again.
  const retried = count("applied") + count("duplicate") + failed;
  // The letters selected: those a stopped run did not get to as well.
  const selected = results.length + (stopped === undefined ? 0 : 1) + notTried.length;
  if (output === "json")
    printJson({
      letters: selected,
      retried,
      results: results.map((r) => ({ id: r.id, ...r.outcome })),
      ...(stopped === undefined
        ? {}
        : { stopped: { id: stopped.id, error: stoppedMessage }, notTried: notTried.map((l) => l.id) }),
    });
  else {
    printTable([
      ...results.map((r) => ({ id: r.id, record: r.offset, outcome: describeOutcome(r.outcome) })),
      ...(stopped === undefined
        ? []
        : [
            {
              id: stopped.id,
              record: stopped.offset,
              outcome: `stopped: ${stoppedMessage}`,
            },
          ]),
      ...notTried.map((l) => ({ id: l.id, record: l.offset, outcome: "not tried" })),
    ]);
    process.stdout.write(
      `${selected} dead letters, ${retried} retried: ${count("applied")} applied, ${count("duplicate")} duplicate, ${failed} failed again; ${count("superseded")} superseded by a rebuild, ${later} not retried after later records, ${count("already_resolved")} already resolved\n`,
    );
  }
  if (stopped !== undefined)
    process.stderr.write(
      `replayable: the retry stopped at dead letter ${stopped.id} (${stopped.offset}); the ${results.length} before it keep the outcomes above, ${notTried.length} after it were not tried; run the command again once the cause below is fixed (a letter resolved meanwhile is said so)\n`,
    );
  if (failed > 0) {
    process.stderr.write(
      `replayable: ${failed} of ${results.length} dead letters failed again; see \`dead-letters show <id>\`\n`,
    );
    process.exitCode = 1;
  }
  if (later > 0) {
    process.stderr.write(
      `replayable: ${later} of ${results.length} dead letters were not retried: later records of their partitions were applied already and a retried record could overwrite a newer value of its key. Run \`replayable rebuild\` to apply the whole log again in order (the fix in place), or retry with --out-of-order if no later record has the same key\n`,
    );
    process.exitCode = 1;
  }
}

function discardCommand(): Command {
  return withFilters(new Command("discard"))
    .description(
      "resolve unresolved dead letters as 'discarded' without applying them; the bytes stay unless --delete-bytes (dry run unless --execute)",
    )
    .option("--execute", "discard them; without it, only list what would be discarded")
    .option("--delete-bytes", "also delete their key, value and headers (cannot be undone)")
    .addOption(outputFlag())
    .action(action(discardAction));
}

/** Resolves the selected dead letters as discarded (or lists them, without `--execute`). */
async function discardAction(flags: ChangeFlags): Promise<void> {
  const setup = await configFrom(flags, { REPLAYABLE_PROJECTION: flags.projection });
  const { config } = setup;
  await checkDatabase(config.databaseUrl, []);
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    const { projection } = await targetOf(pool, setup, flags);
    const letters = await selectNamed(pool, flags, projection.name);
    if (!flags.execute) {
      dryRun(flags.deleteBytes ? "discard (deleting their bytes)" : "discard", letters, flags.output);
      return;
    }
    let discarded = 0;
    const by = operator();
    for (const letter of letters) {
      if (await resolveDeadLetter(pool, letter.id, "discarded", by, flags.deleteBytes === true))
        discarded += 1;
    }
    if (flags.output === "json")
      printJson({ discarded, ids: letters.map((l) => l.id), bytesDeleted: flags.deleteBytes === true });
    else
      process.stdout.write(
        `discarded ${discarded} dead letter${discarded === 1 ? "" : "s"}${flags.deleteBytes ? " and deleted their bytes" : "; their bytes stay in replayable.dead_letters"}\n`,
      );
  } finally {
    await pool.end();
  }
}

function dryRun(
  verb: string,
  letters: readonly DeadLetter[],
  output: string,
  notRetried?: readonly { id: string; reason: string }[],
): void {
  if (output === "json") {
    printJson({
      dryRun: true,
      wouldAffect: letters.length,
      deadLetters: letters.map((l) => letterJson(l, false)),
      ...(notRetried === undefined ? {} : { wouldNotRetry: notRetried }),
    });
    return;
  }
  printTable(letters.map(listRow));
  process.stdout.write(
    `dry run: would ${verb} ${letters.length} dead letter${letters.length === 1 ? "" : "s"}; add --execute to do it\n`,
  );
  if (notRetried !== undefined && notRetried.length > 0)
    process.stdout.write(
      `--execute would not retry ${notRetried.length} of them unless --out-of-order: ${notRetried.map((r) => `${r.id} (${r.reason})`).join("; ")}\n`,
    );
}

/** Builds the `dead-letters` command and its subcommands. */
export function deadLettersCommand(): Command {
  return new Command("dead-letters")
    .description("inspect, retry or discard the records that could not be applied (replayable.dead_letters)")
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addCommand(retryCommand())
    .addCommand(discardCommand());
}
