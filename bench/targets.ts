/**
 * The targets `make bench` checks per shape (issue 15; docs/benchmarks.md "Targets"), and the
 * correctness checks that make a fast number worthless when the ledger came out wrong.
 */
import type { ScenarioMeasurement, ScenarioName } from "./scenario.js";

/** What one scenario measured, with the state its database was left in (none for the raw ones). */
export interface ScenarioState {
  readonly measurement: ScenarioMeasurement;
  readonly dedupe?: {
    readonly checkpointRows: number;
    readonly eventIdRows: number;
    readonly deadLetters: number;
    readonly checksum: string;
  };
}

/** A target or check and how it went; `skipped` when a scenario it needs did not run. */
export interface TargetResult {
  readonly name: string;
  readonly value: string;
  readonly required: string;
  readonly status: "met" | "missed" | "skipped";
}

/** Inputs of {@link evaluateTargets}, for one shape. */
export interface TargetInput {
  readonly states: ReadonlyMap<ScenarioName, ScenarioState>;
  readonly partitions: number;
  /**
   * What the produced stream must give: distinct events, re-sent records, the ledger checksum with
   * each event applied once (event-id dedupe) and with every record applied (offset dedupe).
   */
  readonly expected: {
    readonly events: number;
    readonly duplicates: number;
    readonly checksum: string;
    readonly everyRecordChecksum: string;
  };
  /** Records produced. */
  readonly count: number;
  /** True when the naive scenario ran on a prefix (its dedupe state is not checked). */
  readonly naiveLimited: boolean;
}

/** Largest peak RSS of a replayable scenario, bytes (256 MB: a member fits a small container). */
export const MAX_PEAK_RSS_BYTES = 256 * 1024 * 1024;

/** The scenarios that run replayable (their peak RSS is a target; raw and naive are information). */
const REPLAYABLE_SCENARIOS: readonly ScenarioName[] = ["batch", "batch-offset", "replay", "per-record"];

/**
 * Cores the applying scenarios keep busy, at least (issue 27): a member should use the machine,
 * not wait. Of the 2 cores of the machine the targets were set on.
 */
export const MIN_CORES_BUSY = 1.6;

/** Node CPU per record, at most this times `raw-1mib`'s of the same run and shape (issue 27). */
export const NODE_CPU_TARGETS = [
  ["batch-offset", 1.5],
  ["replay", 0.5],
] as const satisfies readonly (readonly [ScenarioName, number])[];

/** The one rate target left: a replay of what is applied reads faster than raw KafkaJS. */
export const MIN_REPLAY_RATE_RATIO = 1.5;

/** PostgreSQL CPU per record of `batch` (event-id dedupe) at most this times `batch-offset`'s. */
export const MAX_EVENT_ID_PG_CPU_RATIO = 1.5;

/** Records per second from the first group join to the last batch; 0 when no time passed. */
export function recordsPerSecond(m: ScenarioMeasurement): number {
  return m.elapsedMs > 0 ? (m.records * 1000) / m.elapsedMs : 0;
}

/** PostgreSQL CPU time per record, µs; undefined when it was not measured or nothing was read. */
export function postgresCpuUsPerRecord(m: ScenarioMeasurement): number | undefined {
  return perRecord(m, m.postgresCpuMs);
}

/** Node CPU time per record (the scenario's process: main thread, GC and libuv threads), µs. */
export function nodeCpuUsPerRecord(m: ScenarioMeasurement): number | undefined {
  return perRecord(m, m.cpuMs);
}

/**
 * Cores the scenario kept busy: records/s × (Node + PostgreSQL + broker CPU per record), i.e. the
 * CPU time of the three over the scenario's elapsed time. Undefined when PostgreSQL's or the
 * broker's CPU was not measured (so a missing part never flatters or hides the number), or nothing
 * was read.
 */
export function coresBusy(m: ScenarioMeasurement): number | undefined {
  const parts = [nodeCpuUsPerRecord(m), postgresCpuUsPerRecord(m), perRecord(m, m.brokerCpuMs)];
  if (parts.some((p) => p === undefined)) return undefined;
  const usPerRecord = parts.reduce<number>((sum, p) => sum + p!, 0);
  return (recordsPerSecond(m) * usPerRecord) / 1e6;
}

/** `cpuMs` per record of `m`, µs; undefined when `cpuMs` is null or absent, or no record was read. */
export function perRecord(m: ScenarioMeasurement, cpuMs: number | null | undefined): number | undefined {
  return cpuMs === null || cpuMs === undefined || m.records === 0 ? undefined : (cpuMs * 1000) / m.records;
}

/**
 * Checks every target and correctness check of one shape against what its scenarios measured
 * (docs/benchmarks.md "Targets"): how busy the member keeps the machine and its CPU per record
 * (issue 27), memory, and the state the scenarios left. Rates are information, except replay's.
 */
export function evaluateTargets(input: TargetInput): TargetResult[] {
  const { states } = input;
  const results: TargetResult[] = [];
  const raw = states.get("raw-1mib")?.measurement;
  for (const scenario of ["batch-offset", "batch"] as const) {
    const name = `${scenario} cores busy`;
    const required = `>= ${MIN_CORES_BUSY}`;
    const m = states.get(scenario)?.measurement;
    const busy = m === undefined ? undefined : coresBusy(m);
    if (busy === undefined) results.push({ name, value: "-", required, status: "skipped" });
    else check(results, name, busy.toFixed(2), required, busy >= MIN_CORES_BUSY);
  }
  for (const [scenario, atMost] of NODE_CPU_TARGETS) {
    const name = `${scenario} / raw-1mib Node CPU µs/record`;
    const m = states.get(scenario)?.measurement;
    const a = m === undefined ? undefined : nodeCpuUsPerRecord(m);
    const b = raw === undefined ? undefined : nodeCpuUsPerRecord(raw);
    results.push(ratioResult(name, a, b, { atMost }));
  }
  const replay = states.get("replay")?.measurement;
  results.push(
    ratioResult(
      "replay / raw-1mib records/s",
      replay === undefined ? undefined : recordsPerSecond(replay),
      raw === undefined ? undefined : recordsPerSecond(raw),
      { atLeast: MIN_REPLAY_RATE_RATIO },
    ),
  );
  const eventId = states.get("batch")?.measurement;
  const offset = states.get("batch-offset")?.measurement;
  results.push(
    ratioResult(
      "batch / batch-offset PG CPU µs/record",
      eventId === undefined ? undefined : postgresCpuUsPerRecord(eventId),
      offset === undefined ? undefined : postgresCpuUsPerRecord(offset),
      { atMost: MAX_EVENT_ID_PG_CPU_RATIO },
    ),
  );
  for (const scenario of REPLAYABLE_SCENARIOS) {
    const m = states.get(scenario)?.measurement;
    if (m === undefined) continue;
    const mbs = (m.peakRssBytes / 1024 / 1024).toFixed(0);
    const limit =
      m.memoryLimitBytes === undefined || m.memoryLimitBytes === null
        ? "no memory limit"
        : `${(m.memoryLimitBytes / 1024 / 1024).toFixed(0)} MiB limit`;
    check(results, `${scenario} peak RSS MB (${limit})`, mbs, "<= 256", m.peakRssBytes <= MAX_PEAK_RSS_BYTES);
  }
  stateChecks(input, results);
  return results;
}

/** `a / b` against a bound; skipped when either is unknown or `b` is 0. */
function ratioResult(
  name: string,
  a: number | undefined,
  b: number | undefined,
  bound: { atMost: number } | { atLeast: number },
): TargetResult {
  const required = "atMost" in bound ? `<= ${bound.atMost}` : `>= ${bound.atLeast}`;
  if (a === undefined || b === undefined || b === 0) return { name, value: "-", required, status: "skipped" };
  const value = a / b;
  // Rounded to the printed precision first, so a value printed as the bound is met.
  const shown = Number(value.toFixed(3));
  const ok = "atMost" in bound ? shown <= bound.atMost : shown >= bound.atLeast;
  return { name, value: value.toFixed(3), required, status: ok ? "met" : "missed" };
}

/** The state each replayable scenario left: dedupe rows, checksum, dead letters, what the replay did. */
function stateChecks(input: TargetInput, results: TargetResult[]): void {
  const { states, partitions, expected, count } = input;
  for (const scenario of ["per-record", "batch", "batch-offset", "replay"] as const) {
    const d = states.get(scenario)?.dedupe;
    if (d === undefined) continue;
    // Offset dedupe keeps no event ids and applies a re-sent record again.
    const byOffset = scenario === "batch-offset";
    const events = byOffset ? 0 : expected.events;
    const checksum = byOffset ? expected.everyRecordChecksum : expected.checksum;
    check(
      results,
      `${scenario} checkpoint rows (offset-keyed state)`,
      d.checkpointRows,
      `= ${partitions} partitions`,
      d.checkpointRows === partitions,
    );
    check(
      results,
      `${scenario} event-id rows`,
      d.eventIdRows,
      `= ${events} events`,
      d.eventIdRows === events,
    );
    check(
      results,
      `${scenario} ledger checksum${byOffset ? " (every record applied)" : ""}`,
      d.checksum.slice(0, 12),
      checksum.slice(0, 12),
      d.checksum === checksum,
    );
    check(results, `${scenario} dead letters`, d.deadLetters, 0, d.deadLetters === 0);
  }
  const replay = states.get("replay")?.measurement;
  if (replay !== undefined) {
    check(results, "replay records applied again", replay.applied, 0, replay.applied === 0);
    check(
      results,
      "replay duplicates counted",
      replay.duplicates,
      `= ${count} records`,
      replay.duplicates === count,
    );
  }
  const naive = states.get("naive");
  if (naive?.dedupe !== undefined && !input.naiveLimited) {
    check(
      results,
      "naive ledger checksum",
      naive.dedupe.checksum.slice(0, 12),
      expected.checksum.slice(0, 12),
      naive.dedupe.checksum === expected.checksum,
    );
  }
}

function check(
  results: TargetResult[],
  name: string,
  value: string | number,
  required: string | number,
  ok: boolean,
): void {
  results.push({ name, value: String(value), required: String(required), status: ok ? "met" : "missed" });
}
