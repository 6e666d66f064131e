/** Splitting one partition's fetched records into transactions bounded by record count and bytes. */
import { recordBytes, type KafkaRecord } from "../record.js";

/**
 * Splits `records` (in offset order) into consecutive chunks of at most `maxRecords` records and
 * at most `maxBytes` bytes each; a single record larger than `maxBytes` gets a chunk of its own.
 */
export function chunkRecords(
  records: readonly KafkaRecord[],
  maxRecords: number,
  maxBytes: number,
): KafkaRecord[][] {
  const chunks: KafkaRecord[][] = [];
  let current: KafkaRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = recordBytes(record);
    if (current.length > 0 && (current.length >= maxRecords || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(record);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
