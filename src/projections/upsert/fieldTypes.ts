/**
 * The PostgreSQL types a zero-code upsert sink declares for its fields, and how a JSON value (or the
 * text of a record key or header) becomes the text PostgreSQL's input function of that type reads.
 * Checking here, in decode, lets a bad field be dead-lettered with its name instead of failing the
 * statement with a message that names no field.
 */
import { unstorableTextReason } from "../../text/text.js";

/**
 * The declarable types, by their PostgreSQL names ("Data Types", chapter 8 of the PostgreSQL docs).
 * The column may have another type: the value is cast to it with PostgreSQL's assignment cast, as
 * an INSERT does (start-up validation checks that such a cast exists).
 */
export const FIELD_TYPES = [
  "text",
  "boolean",
  "smallint",
  "integer",
  "bigint",
  "numeric",
  "real",
  "double precision",
  "date",
  "timestamp",
  "timestamptz",
  "uuid",
  "json",
  "jsonb",
] as const;

/** One of {@link FIELD_TYPES}. */
export type FieldType = (typeof FIELD_TYPES)[number];

/**
 * The types a key part may declare: those whose text, as converted here, is equal exactly when the
 * values are equal in PostgreSQL (integers without leading zeros, UUIDs in lower case), so a batch
 * can be ordered per key in JavaScript (see applyUpsertBatch.ts).
 */
export const KEY_TYPES = [
  "text",
  "smallint",
  "integer",
  "bigint",
  "uuid",
] as const satisfies readonly FieldType[];

/** One of {@link KEY_TYPES}. */
export type KeyType = (typeof KEY_TYPES)[number];

/** A value converted to a statement parameter (`null` is SQL NULL), or why it cannot be. */
export type Converted =
  { readonly ok: true; readonly text: string | null } | { readonly ok: false; readonly expected: string };

const INTEGER_RANGES: Record<"smallint" | "integer" | "bigint", readonly [bigint, bigint]> = {
  smallint: [-32768n, 32767n],
  integer: [-2147483648n, 2147483647n],
  bigint: [-9223372036854775808n, 9223372036854775807n],
};
const INTEGER_TEXT = /^[+-]?\d{1,30}$/;
const NUMERIC_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const UUID_TEXT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;
// ISO 8601 / RFC 3339 date-time: `T` or a space, optional seconds and fraction, optional offset.
const TIMESTAMP_TEXT =
  /^(\d{4})-(\d{2})-(\d{2})[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?$/i;
// The range of JavaScript dates (ECMA-262 "Time Values and Time Range"), in ms since the epoch.
const MAX_EPOCH_MS = 8.64e15;

/** `JSON.rawJSON` and `JSON.isRawJSON` (ECMAScript "JSON.parse source text access"; V8 11.4, Node.js 22). */
const rawJson = JSON as JSON & {
  rawJSON?: (text: string) => unknown;
  isRawJSON?: (value: unknown) => value is { readonly rawJSON: string };
};

/**
 * A `JSON.parse` reviver that keeps each number whose double prints otherwise than it was sent
 * (`1.0`, `12345678901234567890123`, `1e400`) as its source text (`JSON.rawJSON`), so that
 * `JSON.stringify` writes it back unchanged into a `json`/`jsonb` column, and {@link fromJson}
 * gives the number types its exact value (never the double's rounding). Undefined where the engine
 * lacks source text access (Node.js before 22).
 */
export const exactNumbers:
  ((key: string, value: unknown, context?: { source?: string }) => unknown) | undefined =
  typeof rawJson.rawJSON === "function"
    ? (_key, value, context) =>
        typeof value === "number" && context?.source !== undefined && String(value) !== context.source
          ? rawJson.rawJSON!(context.source)
          : value
    : undefined;

/**
 * False only when JSON text `text` holds no number a double cannot hold exactly: every number
 * token of at most 15 significant digits (IEEE 754 doubles keep 15, DBL_DIG) and an exponent of
 * at most two digits is one. A number of 16 or more digits, or with a 3-digit exponent (`1e-400`
 * is 0 as a double), makes it true; so does such a run of digits inside a string (harmless: the
 * exact parse is only slower).
 */
export function mayHoldInexactNumber(text: string): boolean {
  return INEXACT_NUMBER.test(text);
}
const INEXACT_NUMBER = /\d(?:\.?\d){15}|[eE][+-]?\d{3}/;

/**
 * Converts a top-level JSON value of a record's value (or JSON record key) to the text of `type`.
 * JSON `null` is SQL NULL for every type. A value parsed with {@link exactNumbers} keeps every
 * number as sent: a `json`/`jsonb` column stores its text, `numeric`, `real` and `double precision`
 * get its text when a double would not hold it (PostgreSQL rounds a real or double itself, and
 * refuses one out of its range; `1.50` is written as `1.5`, the same value), and
 * the integer types and epoch milliseconds take it only when it is a whole number exactly (`7.0`,
 * `1e3`; not `2.5` or `1.0000000000000001`) below 2^53 (a larger integer must be sent as a string,
 * as JSON readers that parse numbers to doubles lose its digits).
 */
export function fromJson(type: FieldType, sent: unknown): Converted {
  if (sent === null) return { ok: true, text: null };
  if (type === "json" || type === "jsonb") return ok(JSON.stringify(sent));
  const exact = rawJson.isRawJSON?.(sent) ? sent.rawJSON : undefined;
  const value = exact !== undefined ? Number(exact) : sent;
  // A number whose text is a whole number below 2^53, as digits; undefined otherwise.
  const whole = (n: number) =>
    !Number.isSafeInteger(n) ? undefined : exact === undefined ? String(n) : wholeNumberText(exact);
  switch (type) {
    case "text":
      return typeof value === "string" ? text(value) : no("a JSON string");
    case "boolean":
      return typeof value === "boolean" ? { ok: true, text: String(value) } : no("true or false");
    case "smallint":
    case "integer":
    case "bigint": {
      const expected = `a whole number from ${INTEGER_RANGES[type][0]} to ${INTEGER_RANGES[type][1]} (a JSON number below 2^53, or a string of digits)`;
      if (typeof value === "number") {
        const digits = whole(value);
        return digits !== undefined ? integer(type, digits, expected) : no(expected);
      }
      return typeof value === "string" ? integer(type, value, expected) : no(expected);
    }
    case "numeric":
    case "real":
    case "double precision": {
      const expected = "a JSON number, or a string holding a decimal number";
      if (typeof value === "number") {
        // Beyond a double's range (`1e400`) too: numeric holds it; PostgreSQL refuses it for the others.
        if (exact !== undefined && mayHoldInexactNumber(exact)) return ok(exact);
        return Number.isFinite(value) ? ok(String(value)) : no(expected);
      }
      return typeof value === "string" && NUMERIC_TEXT.test(value) ? ok(value) : no(expected);
    }
    case "timestamptz":
      if (typeof value === "number") {
        return whole(value) !== undefined && Math.abs(value) <= MAX_EPOCH_MS
          ? ok(new Date(value).toISOString())
          : no(TIMESTAMPTZ_EXPECTED);
      }
      return typeof value === "string" ? fromText(type, value) : no(TIMESTAMPTZ_EXPECTED);
    default:
      return typeof value === "string" ? fromText(type, value) : no(expectedText(type));
  }
}

/**
 * Converts text (a record key or header as UTF-8, or a JSON string field) to the text of `type`:
 * the same rules as {@link fromJson} for a JSON string, except that `boolean` reads `true`/`false`,
 * and `json`/`jsonb` must parse as JSON.
 */
export function fromText(type: FieldType, value: string): Converted {
  switch (type) {
    case "text":
      return text(value);
    case "boolean":
      return value === "true" || value === "false" ? ok(value) : no('"true" or "false"');
    case "smallint":
    case "integer":
    case "bigint":
      return integer(
        type,
        value,
        `a whole number from ${INTEGER_RANGES[type][0]} to ${INTEGER_RANGES[type][1]}`,
      );
    case "numeric":
    case "real":
    case "double precision":
      return NUMERIC_TEXT.test(value) ? ok(value) : no("a decimal number");
    case "uuid":
      return UUID_TEXT.test(value) ? ok(value.toLowerCase()) : no(expectedText(type));
    case "date": {
      const m = DATE_TEXT.exec(value);
      return m !== null && realDate(m[1]!, m[2]!, m[3]!) ? ok(value) : no(expectedText(type));
    }
    case "timestamp":
    case "timestamptz": {
      const m = TIMESTAMP_TEXT.exec(value);
      const zone = m?.[7];
      const valid = m !== null && realDate(m[1]!, m[2]!, m[3]!);
      // timestamptz without an offset would be read in the session's TimeZone; timestamp ignores one.
      if (!valid || (type === "timestamptz") !== (zone !== undefined))
        return no(type === "timestamptz" ? TIMESTAMPTZ_EXPECTED : expectedText(type));
      return ok(value);
    }
    case "json":
    case "jsonb":
      try {
        JSON.parse(value);
        return text(value);
      } catch {
        return no("JSON text");
      }
  }
}

const TIMESTAMPTZ_EXPECTED =
  'an ISO-8601 date-time with a UTC offset (e.g. "2026-01-31T12:00:00Z" or "…+02:00"), or a whole number of ms since the epoch';

function expectedText(type: FieldType): string {
  switch (type) {
    case "uuid":
      return 'a UUID string (e.g. "123e4567-e89b-12d3-a456-426614174000")';
    case "date":
      return 'an ISO-8601 date string (e.g. "2026-01-31")';
    case "timestamp":
      return 'an ISO-8601 date-time string without an offset (e.g. "2026-01-31T12:00:00"); declare timestamptz for one with an offset';
    default:
      return `a value of type ${type}`;
  }
}

/**
 * The integer a JSON number's text stands for exactly, as digits (`1e3` → `1000`, `7.0` → `7`,
 * `-0` → `0`); undefined when it is not a whole number (`2.5`, `1e-400`, `1.0000000000000001`),
 * not a JSON number, or longer than 30 digits (beyond every integer type).
 */
export function wholeNumberText(source: string): string | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(source);
  if (match === null) return undefined;
  const [, sign = "", int = "", fraction = "", exponent = "0"] = match;
  let digits = int + fraction;
  // The value is digits × 10^-scale.
  const scale = fraction.length - Number(exponent);
  if (/^0*$/.test(digits)) return "0";
  if (scale > 0) {
    const kept = Math.max(0, digits.length - scale);
    if (/[^0]/.test(digits.slice(kept))) return undefined;
    digits = digits.slice(0, kept);
  } else if (scale < 0) {
    if (-scale > 30) return undefined;
    digits += "0".repeat(-scale);
  }
  digits = digits.replace(/^0+/, "");
  return digits.length > 30 ? undefined : sign + digits;
}

function integer(type: keyof typeof INTEGER_RANGES, value: string, expected: string): Converted {
  if (!INTEGER_TEXT.test(value)) return no(expected);
  const n = BigInt(value);
  const [min, max] = INTEGER_RANGES[type];
  return n >= min && n <= max ? ok(n.toString()) : no(expected);
}

/** True when year-month-day names a day of the proleptic Gregorian calendar (no Feb 30). */
function realDate(year: string, month: string, day: string): boolean {
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  const date = new Date(0);
  date.setUTCFullYear(y, m - 1, d); // not Date.UTC, which maps years 0..99 to 1900..1999
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

function text(value: string): Converted {
  const reason = unstorableTextReason(value);
  return reason === undefined ? ok(value) : no(`text PostgreSQL can store (this string ${reason})`);
}

function ok(text: string): Converted {
  return { ok: true, text };
}

function no(expected: string): Converted {
  return { ok: false, expected };
}
