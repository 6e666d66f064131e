/**
 * KafkaJS's own record-batch encoder and fetch decoder, for the benchmarks that build and decode
 * record batches without a broker (bench/recordOverhead.ts, bench/decodeCost.ts). Internal modules
 * of kafkajs 2.2.4 as patched here, typed only as far as those scripts use them.
 */
import { createRequire } from "node:module";
import type { KafkaMessage } from "kafkajs";

const require = createRequire(import.meta.url);

/** What KafkaJS's encoders return. */
export type Encoded = { buffer: Buffer };

/** Encodes a record batch (magic 2) of records made with {@link Record}. */
export const { RecordBatch } = require("kafkajs/src/protocol/recordBatch/v0/index.js") as {
  RecordBatch: (o: { firstOffset: unknown; lastOffsetDelta: number; records: unknown[] }) => Promise<Encoded>;
};
/** One record of a batch: offsetDelta, timestampDelta, key, value, headers. */
export const Record = require("kafkajs/src/protocol/recordBatch/record/v0/index.js") as (
  o: object,
) => unknown;
/** KafkaJS's 64-bit integer. */
export const Long = require("kafkajs/src/utils/long.js") as { fromValue(v: string): unknown };
/** The protocol encoder (`writeBytes`: an int32 length, then the bytes). */
export const Encoder = require("kafkajs/src/protocol/encoder.js") as new () => {
  writeBytes(b: Buffer): Encoded;
};
/** The protocol decoder over one buffer. */
export const Decoder = require("kafkajs/src/protocol/decoder.js") as new (b: Buffer) => unknown;
/** Decodes the record batches of one partition's fetched bytes, as a fetch does. */
export const decodeMessages = require("kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js") as ((
  d: unknown,
  context?: unknown,
) => Promise<KafkaMessage[]>) & {
  /** Patch 012's context: with `recordBatchesAsBytes`, whole record batches come as bytes. */
  fetchContext(args: {
    fetchOffset: string;
    recordBatchesAsBytes: boolean;
    highWatermark: string;
    abortedTransactions: never[];
  }): unknown;
};
