/** Writes a record that cannot be applied to replayable.dead_letters, with its exact bytes. */
import type pg from "pg";
import type { KafkaRecord } from "../record.js";

/**
 * `dead_letters.headers` as stored: each value as base64, a null value as JSON `null`.
 * - an object, header name → values in order (Kafka headers may repeat), when every name can be a
 *   jsonb key;
 * - an array of `[name as base64 of its UTF-8, values]` pairs, in order, when a name holds U+0000,
 *   which no jsonb string can hold (PostgreSQL refuses `\u0000` with SQLSTATE 22P05).
 * Either way any bytes survive, `__proto__` included; {@link headersFromJson} reads both.
 */
export type StoredHeaders = Record<string, (string | null)[]> | [string, (string | null)[]][];

/** The headers of `record` as `dead_letters.headers` stores them ({@link StoredHeaders}). */
export function headersToJson(headers: KafkaRecord["headers"]): StoredHeaders {
  const names = Object.keys(headers);
  const encode = (values: readonly (Buffer | null)[]) => values.map((v) => v?.toString("base64") ?? null);
  if (names.some((name) => name.includes("\u0000"))) {
    return names.map((name): [string, (string | null)[]] => [
      Buffer.from(name, "utf8").toString("base64"),
      encode(headers[name]!),
    ]);
  }
  // No prototype: a header named __proto__ must be an own property, not the object's prototype.
  const json = Object.create(null) as Record<string, (string | null)[]>;
  for (const name of names) json[name] = encode(headers[name]!);
  return json;
}

/** Headers read back from `dead_letters.headers` ({@link StoredHeaders}), in an object without a prototype. */
export function headersFromJson(stored: StoredHeaders): KafkaRecord["headers"] {
  const headers = Object.create(null) as Record<string, (Buffer | null)[]>;
  const decode = (values: (string | null)[]) =>
    values.map((v) => (v === null ? null : Buffer.from(v, "base64")));
  if (Array.isArray(stored)) {
    for (const [name, values] of stored)
      headers[Buffer.from(name, "base64").toString("utf8")] = decode(values);
  } else {
    for (const name of Object.keys(stored)) headers[name] = decode(stored[name]!);
  }
  return headers;
}

/**
 * Stores `record` with the error's code and message; called inside the applying transaction.
 * A record that already has an unresolved dead letter (the same projection, topic, partition and
 * offset: read again after a rebuild) gets `attempts + 1` and the new error instead of a second row.
 * @returns the dead letter's id (bigint as a decimal string).
 */
export async function insertDeadLetter(
  client: pg.ClientBase,
  projection: string,
  record: KafkaRecord,
  errorCode: string,
  errorMessage: string,
): Promise<string> {
  const storable = timestampStorable(record.timestamp);
  const result = await client.query<{ id: string }>(
    `INSERT INTO replayable.dead_letters AS d
       (projection, topic, partition, "offset", record_timestamp, key, value, headers, error_code, error_message)
     VALUES ($1, $2, $3, $4::bigint, CASE WHEN $11 THEN to_timestamp($5::bigint / 1000.0) END, $6, $7, $8::jsonb, $9, $10)
     ON CONFLICT (projection, topic, partition, "offset") WHERE resolved_at IS NULL
     DO UPDATE SET attempts = d.attempts + 1, error_code = excluded.error_code,
                   error_message = excluded.error_message
     RETURNING id`,
    [
      projection,
      record.topic,
      record.partition,
      record.offset,
      record.timestamp,
      record.key,
      record.value,
      JSON.stringify(headersToJson(record.headers)),
      errorCode,
      (storable
        ? errorMessage
        : `${errorMessage} (record timestamp ${record.timestamp} ms is outside PostgreSQL's timestamp range; stored as NULL)`
      ).replaceAll("\u0000", "\\0"),
      storable,
    ],
  );
  return result.rows[0]!.id;
}

/**
 * PostgreSQL's `timestamptz` range in ms since the epoch (4713 BC to 294276 AD, "Date/Time Types"):
 * Kafka accepts any past CreateTime, so a record's timestamp may lie outside it.
 */
const TIMESTAMPTZ_MIN_MS = -210_866_803_200_000n;
const TIMESTAMPTZ_MAX_MS = 9_224_318_015_999_999n;

/** True when `timestampMs` (a decimal string) fits PostgreSQL's `timestamptz`. */
function timestampStorable(timestampMs: string): boolean {
  let ms: bigint;
  try {
    ms = BigInt(timestampMs);
  } catch {
    return false;
  }
  return ms >= TIMESTAMPTZ_MIN_MS && ms <= TIMESTAMPTZ_MAX_MS;
}
