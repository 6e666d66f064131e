/**
 * The pure half of `replay`: for each partition, the new committed offset a reset gives
 * (the rules of `kafka-consumer-groups --reset-offsets`, KIP-122) and what running the
 * consumer afterwards will do, measured against the projection's checkpoint (docs/design.md
 * "Replay and rebuild"). All offsets are 64-bit: strings in, bigint inside, strings out.
 */
import { ReplayableError } from "../errors.js";
import { parseOffset, type OffsetString } from "../offsets.js";
import type { ResetSpec } from "./resetSpec.js";
import { timestampBefore } from "./timeSpecs.js";

/** What is known about one partition before the reset. */
export interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  readonly logStartOffset: OffsetString;
  readonly highWatermark: OffsetString;
  /** The group's committed offset; null when it has none for this partition. */
  readonly committedOffset: OffsetString | null;
  /** The projection's checkpoint (next offset to apply); null when it has applied nothing here. */
  readonly checkpoint: OffsetString | null;
  /**
   * For `--to-datetime` and `--by-duration`: the offset of the first record whose timestamp is at
   * or after the requested time, or the high watermark when there is none (Kafka's ListOffsets).
   */
  readonly timestampOffset?: OffsetString;
}

/**
 * One partition's reset and its consequences. Counts are offset distances: with gaps in the
 * offsets (compaction, transaction markers, aborted records) they are upper bounds.
 */
export interface PartitionPlan extends PartitionState {
  readonly newOffset: OffsetString;
  /** The offset asked for when it was outside [log start offset, high watermark] and was clamped. */
  readonly requestedOffset?: OffsetString;
  /** Records the consumer will re-read below the checkpoint and count as duplicates: [new, min(checkpoint, HW)). */
  readonly duplicates: string;
  /** Records at or past the checkpoint, applied for the first time: [max(new, checkpoint), HW). */
  readonly firstApplies: string;
  /** Records between the checkpoint and the new offset that will never be applied (a forward reset). */
  readonly skipped: string;
  /** The checkpoint is above the high watermark (topic recreated or truncated): `run` will refuse. */
  readonly checkpointAheadOfLog: boolean;
  /**
   * The group's committed offset is above the high watermark (topic recreated or truncated, or an
   * offset set by hand): a run from it gets OFFSET_OUT_OF_RANGE and starts again from the log start.
   */
  readonly committedAheadOfLog: boolean;
}

/** Sums of a plan's counts. */
export interface PlanTotals {
  readonly duplicates: string;
  readonly firstApplies: string;
  readonly skipped: string;
}

/**
 * The epoch-ms timestamp whose offsets a time-based reset asks Kafka for; undefined for the others.
 * @param nowMs the current time, for `--by-duration`.
 */
export function resetTimestamp(spec: ResetSpec, nowMs: number): number | undefined {
  if (spec.kind === "to-datetime") return spec.timestampMs;
  if (spec.kind === "by-duration") return timestampBefore(nowMs, spec.durationMs);
  return undefined;
}

/**
 * Moves `offset` into [logStartOffset, highWatermark], as Kafka's `checkOffsetsRange` does for
 * `--to-offset` and `--shift-by` (above the end → the end; below the start → the start).
 */
export function clampOffset(offset: bigint, logStartOffset: bigint, highWatermark: bigint): bigint {
  if (offset > highWatermark) return highWatermark;
  if (offset < logStartOffset) return logStartOffset;
  return offset;
}

/**
 * The new committed offset of one partition under `spec`, after KIP-122:
 * - `--to-earliest`: the log start offset; `--to-latest`: the high watermark;
 * - `--to-current`: the committed offset, or the high watermark when there is none;
 * - `--to-offset N`, `--shift-by ±N` (committed + N): clamped into [log start, high watermark];
 * - `--to-datetime`, `--by-duration`: {@link PartitionState.timestampOffset}.
 * @returns the new offset and, when it was clamped, the offset asked for.
 * @throws ReplayableError CONFIG_INVALID for `--shift-by` on a partition without a committed offset
 *   (Kafka: "Cannot shift offset for partition … since there is no current committed offset").
 */
export function newOffsetFor(spec: ResetSpec, state: PartitionState): { offset: bigint; requested?: bigint } {
  const start = parseOffset(state.logStartOffset, "log start offset");
  const end = parseOffset(state.highWatermark, "high watermark");
  const committed =
    state.committedOffset === null ? undefined : parseOffset(state.committedOffset, "committed offset");
  const clamped = (requested: bigint) => {
    const offset = clampOffset(requested, start, end);
    return offset === requested ? { offset } : { offset, requested };
  };
  switch (spec.kind) {
    case "to-earliest":
      return { offset: start };
    case "to-latest":
      return { offset: end };
    case "to-current":
      return { offset: committed ?? end };
    case "to-offset":
      return clamped(spec.offset);
    case "shift-by":
      if (committed === undefined) {
        throw new ReplayableError(
          "CONFIG_INVALID",
          `--shift-by: cannot shift partition ${state.topic}:${state.partition}, the group has no committed offset for it; use --to-offset or --to-earliest, or leave the partition out (--topic ${state.topic}:<partitions>)`,
        );
      }
      return clamped(committed + spec.shift);
    case "to-datetime":
    case "by-duration":
      if (state.timestampOffset === undefined)
        throw new Error(`newOffsetFor: no offset by timestamp for ${state.topic}:${state.partition}`);
      return { offset: parseOffset(state.timestampOffset, "offset by timestamp") };
  }
}

/**
 * What the consumer does after the group was reset to `newOffset` (docs/design.md "Replay and rebuild"):
 * it reads from `newOffset` (one below the log start moved up to it, where reading really starts;
 * one above the high watermark, which only a committed offset kept by `--to-current` can be, gets
 * OFFSET_OUT_OF_RANGE and starts again from the log start, as replayable's consumers reset to
 * earliest) up to the high watermark; below the checkpoint records are duplicates, at or past it they are
 * applied; a new offset past the checkpoint skips the records in between for good.
 * A missing checkpoint counts as 0 (nothing applied yet).
 */
export function replayCounts(
  newOffset: bigint,
  logStartOffset: bigint,
  highWatermark: bigint,
  checkpoint: bigint | null,
): { duplicates: bigint; firstApplies: bigint; skipped: bigint } {
  const start =
    newOffset > highWatermark ? logStartOffset : clampOffset(newOffset, logStartOffset, highWatermark);
  const k = checkpoint ?? 0n;
  const positive = (n: bigint) => (n > 0n ? n : 0n);
  const min = (a: bigint, b: bigint) => (a < b ? a : b);
  const max = (a: bigint, b: bigint) => (a > b ? a : b);
  return {
    duplicates: positive(min(k, highWatermark) - start),
    firstApplies: positive(highWatermark - max(start, k)),
    skipped: positive(start - max(k, logStartOffset)),
  };
}

/** Plans `spec` for every partition in `states` (same order). @throws as {@link newOffsetFor}. */
export function planReset(spec: ResetSpec, states: readonly PartitionState[]): PartitionPlan[] {
  return states.map((state) => {
    const { offset, requested } = newOffsetFor(spec, state);
    const start = parseOffset(state.logStartOffset);
    const end = parseOffset(state.highWatermark);
    const checkpoint = state.checkpoint === null ? null : parseOffset(state.checkpoint, "checkpoint");
    const counts = replayCounts(offset, start, end, checkpoint);
    return {
      ...state,
      newOffset: offset.toString(),
      ...(requested === undefined ? {} : { requestedOffset: requested.toString() }),
      duplicates: counts.duplicates.toString(),
      firstApplies: counts.firstApplies.toString(),
      skipped: counts.skipped.toString(),
      checkpointAheadOfLog: checkpoint !== null && checkpoint > end,
      committedAheadOfLog:
        state.committedOffset !== null && parseOffset(state.committedOffset, "committed offset") > end,
    };
  });
}

/** Sums the counts of `plans` (as decimal strings). */
export function planTotals(plans: readonly PartitionPlan[]): PlanTotals {
  const sum = (pick: (p: PartitionPlan) => string) =>
    plans.reduce((n, p) => n + BigInt(pick(p)), 0n).toString();
  return {
    duplicates: sum((p) => p.duplicates),
    firstApplies: sum((p) => p.firstApplies),
    skipped: sum((p) => p.skipped),
  };
}
