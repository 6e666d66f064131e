/** Splitting one partition's fetched records into transactions bounded by record count and bytes. */
import { recordBytes, type KafkaRecord } from "../record.js";

/** One chunk: its records and their bytes (keys, values and headers, {@link recordBytes}). */
export interface Chunk {
  readonly records: KafkaRecord[];
  readonly bytes: number;
}

/**
 * Splits `records` (in offset order) into consecutive chunks of at most `maxRecords` records and
 * at most `maxBytes` bytes each; a single record larger than `maxBytes` gets a chunk of its own.
 */
export function chunkRecords(records: readonly KafkaRecord[], maxRecords: number, maxBytes: number): Chunk[] {
  const chunks: Chunk[] = [];
  let current: KafkaRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = recordBytes(record);
    if (current.length > 0 && (current.length >= maxRecords || bytes + size > maxBytes)) {
      chunks.push({ records: current, bytes });
      current = [];
      bytes = 0;
    }
    current.push(record);
    bytes += size;
  }
  if (current.length > 0) chunks.push({ records: current, bytes });
  return chunks;
}
