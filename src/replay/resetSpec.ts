/**
 * Where `replay` moves a consumer group's committed offsets: the reset options of
 * `kafka-consumer-groups --reset-offsets` (KIP-122), one per run.
 */
import { ReplayableError } from "../errors.js";
import { parseKafkaDateTime, parseIsoDuration } from "./timeSpecs.js";

/** One reset, as KIP-122 names them. Offsets and shifts are bigint (64-bit). */
export type ResetSpec =
  | { readonly kind: "to-earliest" }
  | { readonly kind: "to-latest" }
  | { readonly kind: "to-current" }
  | { readonly kind: "to-offset"; readonly offset: bigint }
  | { readonly kind: "shift-by"; readonly shift: bigint }
  | { readonly kind: "to-datetime"; readonly text: string; readonly timestampMs: number }
  | { readonly kind: "by-duration"; readonly text: string; readonly durationMs: bigint };

/** The reset flags as commander hands them over (each undefined when not given). */
export interface ResetFlags {
  toEarliest?: boolean;
  toLatest?: boolean;
  toCurrent?: boolean;
  toOffset?: string;
  shiftBy?: string;
  toDatetime?: string;
  byDuration?: string;
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
const INTEGER = /^[+-]?\d+$/;

/**
 * Reads exactly one reset option from `flags`.
 * @throws ReplayableError CONFIG_INVALID when none or several are given, or a value is invalid
 *   (an offset that is not a non-negative INT64, a shift outside INT64, a bad date-time or duration).
 */
export function parseResetSpec(flags: ResetFlags): ResetSpec {
  const given = [
    flags.toEarliest ? "--to-earliest" : undefined,
    flags.toLatest ? "--to-latest" : undefined,
    flags.toCurrent ? "--to-current" : undefined,
    flags.toOffset !== undefined ? "--to-offset" : undefined,
    flags.shiftBy !== undefined ? "--shift-by" : undefined,
    flags.toDatetime !== undefined ? "--to-datetime" : undefined,
    flags.byDuration !== undefined ? "--by-duration" : undefined,
  ].filter((f) => f !== undefined);
  if (given.length !== 1) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${given.length === 0 ? "no reset option given" : `several reset options given (${given.join(", ")})`}: give exactly one of --to-earliest, --to-latest, --to-current, --to-offset N, --shift-by ±N, --to-datetime YYYY-MM-DDTHH:mm:SS[.sss][Z|±hh:mm], --by-duration PnDTnHnMnS`,
    );
  }
  if (flags.toEarliest) return { kind: "to-earliest" };
  if (flags.toLatest) return { kind: "to-latest" };
  if (flags.toCurrent) return { kind: "to-current" };
  if (flags.toOffset !== undefined) {
    const offset = integer("--to-offset", flags.toOffset, "an offset such as 0 or 1200");
    if (offset < 0n)
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--to-offset: ${flags.toOffset} is negative; give an offset from 0 (use --to-earliest for the log start offset)`,
      );
    return { kind: "to-offset", offset };
  }
  if (flags.shiftBy !== undefined)
    return {
      kind: "shift-by",
      shift: integer("--shift-by", flags.shiftBy, "a signed count such as -100 or 50"),
    };
  if (flags.toDatetime !== undefined)
    return {
      kind: "to-datetime",
      text: flags.toDatetime,
      timestampMs: parseKafkaDateTime(flags.toDatetime),
    };
  const text = flags.byDuration!;
  return { kind: "by-duration", text, durationMs: parseIsoDuration(text) };
}

/** How a spec reads in output, e.g. `--shift-by -10`. */
export function describeResetSpec(spec: ResetSpec): string {
  switch (spec.kind) {
    case "to-offset":
      return `--to-offset ${spec.offset}`;
    case "shift-by":
      return `--shift-by ${spec.shift}`;
    case "to-datetime":
    case "by-duration":
      return `--${spec.kind} ${spec.text}`;
    default:
      return `--${spec.kind}`;
  }
}

function integer(flag: string, value: string, example: string): bigint {
  if (!INTEGER.test(value))
    throw new ReplayableError("CONFIG_INVALID", `${flag}: "${value}" is not a whole number; give ${example}`);
  const n = BigInt(value);
  if (n > INT64_MAX || n < INT64_MIN)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${flag}: ${value} is outside the 64-bit range of Kafka offsets`,
    );
  return n;
}
