/**
 * The shapes `make bench` measures: every value size times every partition count, one topic each
 * (docs/benchmarks.md "Running it").
 */

/** One shape: the size of each record's JSON value and the partitions of its topic. */
export interface Shape {
  /** Bytes of each JSON value; a shorter ledger value is padded up to it (generateLedgerStream). */
  readonly valueBytes: number;
  readonly partitions: number;
}

/**
 * Parses a comma-separated list of whole numbers >= 1, e.g. `200,700,4096`, without repeats.
 * @throws Error naming `flag` when an item is not a whole number >= 1 or is listed twice.
 */
export function parseSizeList(flag: string, text: string): number[] {
  const items = text.split(",").map((s) => s.trim());
  const values = items.map((item) => {
    const n = Number(item);
    if (item === "" || !Number.isSafeInteger(n) || n < 1)
      throw new Error(`${flag}: "${item}" in "${text}" is not a whole number >= 1`);
    return n;
  });
  if (new Set(values).size !== values.length) throw new Error(`${flag}: "${text}" lists a value twice`);
  return values;
}

/** Every value size with every partition count, value size first: `200x6, 200x24, 700x6, …`. */
export function shapesOf(valueBytes: readonly number[], partitions: readonly number[]): Shape[] {
  return valueBytes.flatMap((v) => partitions.map((p) => ({ valueBytes: v, partitions: p })));
}

/**
 * Records to produce for `shape`: `count`, capped so that the topic holds at most `maxShapeMiB` MiB
 * of values (`floor(maxShapeMiB × 2^20 / valueBytes)`), and at least 1.
 */
export function shapeCount(count: number, shape: Shape, maxShapeMiB: number): number {
  return Math.max(1, Math.min(count, Math.floor((maxShapeMiB * 1024 * 1024) / shape.valueBytes)));
}

/** A short name of `shape`, e.g. `700B x 24p`, for tables. */
export function shapeLabel(shape: Shape): string {
  return `${shape.valueBytes}B x ${shape.partitions}p`;
}

/** A name of `shape` usable in topic and database names, e.g. `700b24p`. */
export function shapeSlug(shape: Shape): string {
  return `${shape.valueBytes}b${shape.partitions}p`;
}

/**
 * Bytes of records one producer request of the benchmark carries at most, so that even when all of
 * them go to one partition its record batch stays under the broker's `message.max.bytes` (1 MiB by
 * default; Kafka broker configuration: "the largest record batch size allowed by Kafka").
 */
export const PRODUCE_REQUEST_BYTES = 900_000;

/**
 * The bytes of one partition's record batch the benchmark's producer aims at by default: the Java
 * producer's `batch.size` default (ProducerConfig, 16,384 bytes), so the topics hold record
 * batches of the size most producers write. KafkaJS puts every record of one `send` for a partition
 * into one record batch, so the records per `send` decide the batch size.
 */
export const PRODUCER_BATCH_BYTES = 16_384;

/**
 * Records per producer request for values of `valueBytes` on `partitions` partitions: as many as
 * make each partition's record batch about `batchBytes` on average (each record counted with 256
 * bytes of key, headers and framing on top of its value), at most 2000 and within
 * {@link PRODUCE_REQUEST_BYTES}, at least 1.
 */
export function produceBatchSize(valueBytes: number, partitions: number, batchBytes: number): number {
  const recordBytes = valueBytes + 256;
  const byBatch = Math.floor((partitions * batchBytes) / recordBytes);
  const byRequest = Math.floor(PRODUCE_REQUEST_BYTES / recordBytes);
  return Math.max(1, Math.min(2000, byBatch, byRequest));
}
