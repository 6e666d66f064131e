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

/** Largest peak RSS of any scenario, bytes (256 MB: a member fits a small container). */
export const MAX_PEAK_RSS_BYTES = 256 * 1024 * 1024;

/** The speed targets: scenario / `raw-1mib` at least this (records per second). */
export const RATE_TARGETS = [
  ["batch-offset", 0.8],
  ["batch", 0.6],
  ["replay", 1.5],
] as const satisfies readonly (readonly [ScenarioName, number])[];

/** PostgreSQL CPU per record of `batch` (event-id dedupe) at most this times `batch-offset`'s. */
export const MAX_EVENT_ID_PG_CPU_RATIO = 1.3;

/** Records per second from the first group join to the last batch; 0 when no time passed. */
export function recordsPerSecond(m: ScenarioMeasurement): number {
  return m.elapsedMs > 0 ? (m.records * 1000) / m.elapsedMs : 0;
}

/** PostgreSQL CPU time per record, µs; undefined when it was not measured or nothing was read. */
export function postgresCpuUsPerRecord(m: ScenarioMeasurement): number | undefined {
  return perRecord(m, m.postgresCpuMs);
}

/** `cpuMs` per record of `m`, µs; undefined when `cpuMs` is null or absent, or no record was read. */
export function perRecord(m: ScenarioMeasurement, cpuMs: number | null | undefined): number | undefined {
  return cpuMs === null || cpuMs === undefined || m.records === 0 ? undefined : (cpuMs * 1000) / m.records;
}

/** Checks every target and correctness check of one shape against what its scenarios measured. */
export function evaluateTargets(input: TargetInput): TargetResult[] {
  const { states } = input;
  const results: TargetResult[] = [];
  const ratio = (a: ScenarioName, b: ScenarioName, atLeast: number) => {
    const name = `${a} / ${b}`;
    const x = states.get(a)?.measurement;
    const y = states.get(b)?.measurement;
    if (x === undefined || y === undefined) {
      results.push({ name, value: "-", required: `>= ${atLeast}`, status: "skipped" });
      return;
    }
    const value = recordsPerSecond(y) > 0 ? recordsPerSecond(x) / recordsPerSecond(y) : 0;
    const status = value >= atLeast ? "met" : "missed";
    results.push({ name, value: value.toFixed(3), required: `>= ${atLeast}`, status });
  };
  for (const [scenario, atLeast] of RATE_TARGETS) ratio(scenario, "raw-1mib", atLeast);
  if (states.has("naive")) ratio("batch", "naive", 10);
  results.push(postgresCpuTarget(states));
  for (const [scenario, state] of states)
    check(
      results,
      `${scenario} peak RSS MB`,
      (state.measurement.peakRssBytes / 1024 / 1024).toFixed(0),
      "<= 256",
      state.measurement.peakRssBytes <= MAX_PEAK_RSS_BYTES,
    );
  stateChecks(input, results);
  return results;
}

/** `batch`'s PostgreSQL CPU per record against `batch-offset`'s. */
function postgresCpuTarget(states: TargetInput["states"]): TargetResult {
  const name = "batch / batch-offset PG CPU µs/record";
  const required = `<= ${MAX_EVENT_ID_PG_CPU_RATIO}`;
  const eventId = states.get("batch")?.measurement;
  const offset = states.get("batch-offset")?.measurement;
  const a = eventId === undefined ? undefined : postgresCpuUsPerRecord(eventId);
  const b = offset === undefined ? undefined : postgresCpuUsPerRecord(offset);
  if (a === undefined || b === undefined || b === 0) return { name, value: "-", required, status: "skipped" };
  const value = a / b;
  return {
    name,
    value: value.toFixed(3),
    required,
    status: value <= MAX_EVENT_ID_PG_CPU_RATIO ? "met" : "missed",
  };
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
