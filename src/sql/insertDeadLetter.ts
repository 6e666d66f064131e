/** Writes a record that cannot be applied to replayable.dead_letters, with its exact bytes. */
import type pg from "pg";
import type { KafkaRecord } from "../record.js";

/** Header name → base64 of each value, as `dead_letters.headers` stores them (any bytes survive JSON). */
export function headersToJson(headers: KafkaRecord["headers"]): Record<string, string[]> {
  const json: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(headers)) json[name] = values.map((v) => v.toString("base64"));
  return json;
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
  const result = await client.query<{ id: string }>(
    `INSERT INTO replayable.dead_letters AS d
       (projection, topic, partition, "offset", record_timestamp, key, value, headers, error_code, error_message)
     VALUES ($1, $2, $3, $4::bigint, to_timestamp($5::bigint / 1000.0), $6, $7, $8::jsonb, $9, $10)
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
      errorMessage.replaceAll("\u0000", "\\0"),
    ],
  );
  return result.rows[0]!.id;
}
