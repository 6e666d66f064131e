/**
 * Kafka offsets are signed 64-bit integers (the protocol's INT64). JavaScript
 * numbers lose precision above 2^53, so offsets stay decimal strings at the
 * edges (KafkaJS hands them out as strings) and `bigint` for arithmetic. Never
 * `Number(offset)`.
 */

/** A Kafka offset as KafkaJS and the CLI carry it: a base-10 integer string, e.g. `"42"`. */
export type OffsetString = string;

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
const DECIMAL = /^-?\d+$/;

/**
 * Parses an offset string into a `bigint`, checking it is a base-10 INT64.
 * @param value the offset text, e.g. `"9007199254740993"`.
 * @param field the name to put in the error message (a flag or field name).
 * @throws RangeError naming `field` when the text is not a base-10 integer within INT64.
 */
export function parseOffset(value: string, field = "offset"): bigint {
  if (!DECIMAL.test(value)) {
    throw new RangeError(`${field}: "${value}" is not an offset; give a base-10 integer such as 0 or 42`);
  }
  const parsed = BigInt(value);
  if (parsed > INT64_MAX || parsed < INT64_MIN) {
    throw new RangeError(`${field}: ${value} is outside the 64-bit range of Kafka offsets`);
  }
  return parsed;
}

/**
 * The offset after `offset`: what a consumer commits once it has processed `offset`
 * (Kafka commits "the next offset to read", see the Kafka consumer docs, `commitSync`).
 * @example nextOffset("9007199254740993") === "9007199254740994"
 */
export function nextOffset(offset: OffsetString): OffsetString {
  return (parseOffset(offset) + 1n).toString();
}

/** Compares two offset strings numerically: negative when a < b, 0 when equal, positive when a > b. */
export function compareOffsets(a: OffsetString, b: OffsetString): number {
  const x = parseOffset(a);
  const y = parseOffset(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The larger of two offset strings. */
export function maxOffset(a: OffsetString, b: OffsetString): OffsetString {
  return compareOffsets(a, b) >= 0 ? a : b;
}

/**
 * A committed offset as Kafka's OffsetFetch returns it, or null for "none". Kafka answers -1 for a
 * partition the group never committed; any other negative value (KafkaJS's `admin.setOffsets`
 * commits a seek to -2, its "earliest" sentinel, as the offset -2) is no position either. Both
 * clients treat every negative committed offset as none and fall back to `auto.offset.reset`
 * (Java's ConsumerCoordinator: "Found no committed offset"; KafkaJS's `isInvalidOffset`), so every
 * reader here does too: status, replay and rebuild planning, prune, the lag gauge.
 * @param offset the offset text from OffsetFetch; undefined or null when the partition is absent.
 * @throws RangeError when the text is not a base-10 INT64 (see {@link parseOffset}).
 * @example committedOffsetOrNone("-2") === null; committedOffsetOrNone("42") === "42"
 */
export function committedOffsetOrNone(offset: OffsetString | null | undefined): OffsetString | null {
  if (offset === undefined || offset === null) return null;
  return parseOffset(offset, "committed offset") < 0n ? null : offset;
}

/** `a - b` as a bigint, e.g. lag = high watermark - committed offset. */
export function offsetDistance(a: OffsetString, b: OffsetString): bigint {
  return parseOffset(a) - parseOffset(b);
}

/**
 * An offset, or a difference of offsets (lag, a gap), as a Prometheus sample or a log number.
 * Prometheus samples are float64, so values above 2^53 round to the nearest double: fine for a
 * gauge or a rate, never for arithmetic. The one place where offsets become `number`.
 * @param value a bigint (e.g. from {@link offsetDistance}) or an offset string.
 * @throws RangeError when a string is not a base-10 INT64 (see {@link parseOffset}).
 * @example offsetGaugeValue(offsetDistance("120", "100")) === 20
 */
export function offsetGaugeValue(value: bigint | OffsetString): number {
  return Number(typeof value === "bigint" ? value : parseOffset(value));
}
