/**
 * How far a blue/green version is, as `status` shows it (docs/replay.md "Progress"): the records
 * done since it started (offsets passed: applied, duplicates, dead letters and gaps all count), its
 * lag, its average rate since it was created and the ETA to catch up at that rate. Pure; offsets
 * as exact bigints.
 */
import { parseOffset } from "../offsets.js";

/** One partition of a version, as status read it; offsets and lag are decimal strings. */
export interface VersionPartitionProgress {
  /** Where the version started on it: its group's offset at creation, else the log start offset. */
  readonly startOffset: string;
  /** The version's checkpoint; null (or "-") when it has applied nothing there. */
  readonly checkpoint: string | null;
  /** Records behind the high watermark. */
  readonly lag: string;
}

/** A version's progress; counts are decimal strings. */
export interface VersionProgress {
  /** Sum over partitions of checkpoint − start offset (never below 0). */
  readonly recordsDone: string;
  /** Sum of the partitions' lag. */
  readonly lag: string;
  /** recordsDone / seconds since the version was created, rounded to 0.01. */
  readonly recordsPerSecond: number;
  /** Seconds to catch up at that rate, rounded up: 0 when caught up, null when unknown. */
  readonly etaSeconds: number | null;
  /** "caught up", "unknown" (nothing done yet) or the ETA as `1h 2m 3s`. */
  readonly eta: string;
}

/**
 * The progress of a version created at `createdAtMs` (ms since the epoch), as of `nowMs`.
 * @example versionProgress([{ startOffset: "0", checkpoint: "30", lag: "60" }], 0, 10_000)
 *   // { recordsDone: "30", lag: "60", recordsPerSecond: 3, etaSeconds: 20, eta: "20s" }
 */
export function versionProgress(
  partitions: readonly VersionPartitionProgress[],
  createdAtMs: number,
  nowMs: number,
): VersionProgress {
  let done = 0n;
  let lag = 0n;
  for (const p of partitions) {
    lag += parseOffset(p.lag);
    if (p.checkpoint === null || p.checkpoint === "-") continue;
    const passed = parseOffset(p.checkpoint) - parseOffset(p.startOffset);
    if (passed > 0n) done += passed;
  }
  const elapsedMs = BigInt(Math.max(0, Math.round(nowMs - createdAtMs)));
  const rate = elapsedMs > 0n ? Math.round(Number((done * 100_000n) / elapsedMs)) / 100 : 0;
  const base = { recordsDone: done.toString(), lag: lag.toString(), recordsPerSecond: rate };
  if (lag === 0n) return { ...base, etaSeconds: 0, eta: "caught up" };
  if (done === 0n || elapsedMs === 0n) return { ...base, etaSeconds: null, eta: "unknown" };
  // lag / (done / elapsed s), rounded up, in exact integers.
  const perMs = done * 1000n;
  const seconds = (lag * elapsedMs + perMs - 1n) / perMs;
  return { ...base, etaSeconds: Number(seconds), eta: formatSeconds(seconds) };
}

/** `3725n` → `1h 2m 5s`; units that are 0 are left out, `0s` for 0. */
export function formatSeconds(seconds: bigint): string {
  const parts: string[] = [];
  const h = seconds / 3600n;
  const m = (seconds % 3600n) / 60n;
  const s = seconds % 60n;
  if (h > 0n) parts.push(`${h}h`);
  if (m > 0n) parts.push(`${m}m`);
  if (s > 0n || parts.length === 0) parts.push(`${s}s`);
  return parts.join(" ");
}
