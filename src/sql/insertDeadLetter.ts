/** Writes a record that cannot be applied to replayable.dead_letters, with its exact bytes. */
import type pg from "pg";
import type { KafkaRecord } from "../record.js";

/** Stores `record` with the error's code and message; called inside the applying transaction. */
export async function insertDeadLetter(
  client: pg.ClientBase,
  projection: string,
  record: KafkaRecord,
  errorCode: string,
  errorMessage: string,
): Promise<void> {
  const headers: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(record.headers)) {
    headers[name] = values.map((v) => v.toString("base64"));
  }
  await client.query(
    `INSERT INTO replayable.dead_letters
       (projection, topic, partition, "offset", record_timestamp, key, value, headers, error_code, error_message)
     VALUES ($1, $2, $3, $4::bigint, to_timestamp($5::bigint / 1000.0), $6, $7, $8::jsonb, $9, $10)`,
    [
      projection,
      record.topic,
      record.partition,
      record.offset,
      record.timestamp,
      record.key,
      record.value,
      JSON.stringify(headers),
      errorCode,
      errorMessage.replaceAll("\u0000", "\\0"),
    ],
  );
}
