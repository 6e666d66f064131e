/**
 * The targets `make bench` checks (issue 7; docs/benchmarks.md "Targets"), and the correctness checks
 * that make a fast number worthless when the ledger came out wrong.
 */
import type { ScenarioMeasurement, ScenarioName } from "./scenario.js";

/** What one scenario measured, with the state its database was left in (none for `raw`). */
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

/** Inputs of {@link evaluateTargets}. */
export interface TargetInput {
  readonly states: ReadonlyMap<ScenarioName, ScenarioState>;
  readonly partitions: number;
  /** What the produced stream must give: distinct events, re-sent records, ledger checksum. */
  readonly expected: { readonly events: number; readonly duplicates: number; readonly checksum: string };
  /** Records produced. */
  readonly count: number;
  /** True when the naive scenario ran on a prefix (its dedupe state is not checked). */
  readonly naiveLimited: boolean;
}

/** Largest peak RSS of a replayable scenario, bytes. */
export const MAX_PEAK_RSS_BYTES = 256 * 1024 * 1024;

/** Records per second from the first batch to the last. */
export function recordsPerSecond(m: ScenarioMeasurement): number {
  return m.elapsedMs > 0 ? (m.records * 1000) / m.elapsedMs : 0;
}

/** Checks every target and correctness check against what the scenarios measured. */
export function evaluateTargets(input: TargetInput): TargetResult[] {
  const { states, partitions, expected, count } = input;
  const results: TargetResult[] = [];
  const ratio = (name: string, a: ScenarioName, b: ScenarioName, atLeast: number) => {
    const x = states.get(a)?.measurement;
    const y = states.get(b)?.measurement;
    if (x === undefined || y === undefined) {
      results.push({ name, value: "-", required: `>= ${atLeast}`, status: "skipped" });
      return;
    }
    const value = recordsPerSecond(y) > 0 ? recordsPerSecond(x) / recordsPerSecond(y) : 0;
    results.push({
      name,
      value: value.toFixed(3),
      required: `>= ${atLeast}`,
      status: value >= atLeast ? "met" : "missed",
    });
  };
  ratio("(3) batch / (1) raw", "batch", "raw", 0.5);
  ratio("(5) replay / (1) raw", "replay", "raw", 0.9);
  ratio("(3) batch / (4) naive", "batch", "naive", 10);

  const check = (name: string, value: string | number, required: string | number, ok: boolean) =>
    results.push({ name, value: String(value), required: String(required), status: ok ? "met" : "missed" });
  for (const scenario of ["per-record", "batch", "replay"] as const) {
    const state = states.get(scenario);
    if (state === undefined) continue;
    const rssMb = state.measurement.peakRssBytes / 1024 / 1024;
    check(
      `(${scenarioNumber(scenario)}) peak RSS MB`,
      rssMb.toFixed(0),
      "<= 256",
      state.measurement.peakRssBytes <= MAX_PEAK_RSS_BYTES,
    );
    const d = state.dedupe;
    if (d === undefined) continue;
    check(
      `(${scenarioNumber(scenario)}) checkpoint rows (offset-keyed state)`,
      d.checkpointRows,
      `= ${partitions} partitions`,
      d.checkpointRows === partitions,
    );
    check(
      `(${scenarioNumber(scenario)}) event-id rows`,
      d.eventIdRows,
      `= ${expected.events} events`,
      d.eventIdRows === expected.events,
    );
    check(
      `(${scenarioNumber(scenario)}) ledger checksum`,
      d.checksum.slice(0, 12),
      expected.checksum.slice(0, 12),
      d.checksum === expected.checksum,
    );
    check(`(${scenarioNumber(scenario)}) dead letters`, d.deadLetters, 0, d.deadLetters === 0);
  }
  const replay = states.get("replay")?.measurement;
  if (replay !== undefined) {
    check("(5) records applied again", replay.applied, 0, replay.applied === 0);
    check("(5) duplicates counted", replay.duplicates, `= ${count} records`, replay.duplicates === count);
  }
  const naive = states.get("naive");
  if (naive?.dedupe !== undefined && !input.naiveLimited) {
    check(
      "(4) ledger checksum",
      naive.dedupe.checksum.slice(0, 12),
      expected.checksum.slice(0, 12),
      naive.dedupe.checksum === expected.checksum,
    );
  }
  return results;
}

function scenarioNumber(scenario: ScenarioName): number {
  return { raw: 1, "per-record": 2, batch: 3, naive: 4, replay: 5 }[scenario];
}
