/**
 * The two time arguments of `replay`, read as Kafka's `kafka-consumer-groups --reset-offsets`
 * reads them (KIP-122): `--to-datetime` an ISO-8601 local date-time with an optional zone
 * (Kafka's `Utils.getDateTime`: no zone means UTC), `--by-duration` an ISO-8601 duration
 * `PnDTnHnMnS` (Java's `Duration.parse`). Pure functions; errors name the flag and the fix.
 */
import { ReplayableError } from "../errors.js";

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses `YYYY-MM-DDTHH:mm:SS[.sss][Z|±hh[:mm]]` into epoch milliseconds.
 * Without a zone the time is UTC, as in Kafka's `Utils.getDateTime` (which appends `Z`).
 * The fraction, when given, is exactly three digits (milliseconds).
 * @param text the flag's value, e.g. `2026-01-31T23:00:00.000+01:00`.
 * @param flag the flag to name in errors; default `--to-datetime`.
 * @returns ms since 1970-01-01T00:00:00Z (a Kafka record timestamp).
 * @throws ReplayableError CONFIG_INVALID when the text is not such a date-time, names a day or time
 *   that does not exist (2026-02-30, 24:00), or lies before 1970 (Kafka's ListOffsets reads a
 *   negative timestamp as "latest" or "earliest", never as a time).
 * @example parseKafkaDateTime("1970-01-01T00:00:01Z") === 1000
 */
export function parseKafkaDateTime(text: string, flag = "--to-datetime"): number {
  const m = DATETIME.exec(text);
  const fail = (why: string) =>
    new ReplayableError(
      "CONFIG_INVALID",
      `${flag}: "${text}" ${why}; give YYYY-MM-DDTHH:mm:SS[.sss][Z|±hh:mm], e.g. 2026-01-31T09:30:00.000Z (no zone means UTC)`,
    );
  if (!m) throw fail("is not an ISO-8601 date-time");
  const [, y, mo, d, h, mi, s, ms, zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12) throw fail(`has month ${mo}`);
  if (day < 1 || day > daysInMonth(year, month)) throw fail(`has day ${d}, which ${y}-${mo} does not have`);
  if (hour > 23 || minute > 59 || second > 59) throw fail(`has time ${h}:${mi}:${s}, which does not exist`);
  const offsetMinutes = zoneMinutes(zone ?? "Z");
  if (offsetMinutes === undefined) throw fail(`has zone ${zone}, which is not ±hh:mm with hh <= 18`);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(ms ?? "0"));
  const epochMs = date.getTime() - offsetMinutes * 60_000;
  if (epochMs < 0) throw fail("is before 1970-01-01T00:00:00Z, where Kafka record timestamps start");
  return epochMs;
}

const DURATION = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{1,9}))?S)?)?$/i;

/**
 * Parses an ISO-8601 duration `PnDTnHnMn[.n]S` (days, hours, minutes, seconds, as Java's
 * `Duration.parse`, which `--by-duration` uses) into milliseconds (fractions below 1 ms are cut).
 * Years, months and weeks are refused (their length varies), as are negative durations.
 * @returns the duration in ms, as a bigint (no overflow for any input).
 * @throws ReplayableError CONFIG_INVALID naming `flag` when the text is not such a duration.
 * @example parseIsoDuration("P1DT2H") === 93_600_000n
 */
export function parseIsoDuration(text: string, flag = "--by-duration"): bigint {
  const m = DURATION.exec(text);
  const [, days, hours, minutes, seconds, fraction] = m ?? [];
  const empty = m !== null && [days, hours, minutes, seconds].every((v) => v === undefined);
  if (m === null || empty || /T$/i.test(text)) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${flag}: "${text}" is not an ISO-8601 duration; give PnDTnHnMnS, e.g. PT30M (30 minutes) or P1DT12H (a day and a half), counted back from now`,
    );
  }
  const n = (v: string | undefined) => BigInt(v ?? "0");
  const millis = BigInt(((fraction ?? "") + "000").slice(0, 3));
  return (
    ((n(days) * 24n + n(hours)) * 60n + n(minutes)) * 60_000n + n(seconds) * 1000n + (fraction ? millis : 0n)
  );
}

/**
 * The timestamp `--by-duration` resets to: `nowMs - durationMs`, or 0 when the duration reaches
 * back before 1970 (every record is at or after it).
 */
export function timestampBefore(nowMs: number, durationMs: bigint): number {
  const t = BigInt(nowMs) - durationMs;
  return t < 0n ? 0 : Number(t);
}

/** The days of `month` (1–12) of `year` in the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Minutes east of UTC of `Z`, `±hh`, `±hhmm` or `±hh:mm`; undefined when out of range. */
function zoneMinutes(zone: string): number | undefined {
  if (zone === "Z") return 0;
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(":", "");
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (hours > 18 || minutes > 59) return undefined;
  return sign * (hours * 60 + minutes);
}
