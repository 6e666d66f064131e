/**
 * KafkaJS's internal modules that its patches change (patches/README.md), for the unit tests that
 * build fetch responses with KafkaJS's own record batch encoder and decode them as a fetch does:
 * test/unit/kafka/undecodedBatches.test.ts (patch 009) and recordBatchesAsBytes.test.ts (patch
 * 012). Typed only as far as those tests use them.
 */
import { createRequire } from "node:module";
import type { EachBatchPayload, KafkaMessage } from "kafkajs";

const require = createRequire(import.meta.url);

/** A decoded message, with the fields the patches add and the tests read. */
export type Message = KafkaMessage & { readonly isControlRecord: boolean };
/** What decodeMessages returns: the messages, and the counts the patches add. */
export type Messages = Message[] & { undecoded?: number; asBytes?: number; lastBatchOffset?: string };

/** The arguments of patch 009's `skipContext`. */
export interface SkipArgs {
  fetchOffset: string;
  decodeFloor: string;
  highWatermark: string;
  abortedTransactions: { producerId: string; firstOffset: string }[];
}
/** The arguments of patch 012's `fetchContext`. */
export interface FetchContextArgs extends Omit<SkipArgs, "decodeFloor"> {
  decodeFloor?: string;
  recordBatchesAsBytes: boolean;
}

/** Decodes one partition's record set (an int32 size, then the batches), with a patch's context. */
export const decodeMessages = require("kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js") as ((
  decoder: unknown,
  context?: unknown,
) => Promise<Messages>) & {
  skipContext(args: SkipArgs): unknown;
  fetchContext(args: FetchContextArgs): unknown;
};
/** The protocol decoder over one buffer. */
export const Decoder = require("kafkajs/src/protocol/decoder.js") as new (b: Buffer) => unknown;
/** KafkaJS's 64-bit integer. */
export const Long = require("kafkajs/src/utils/long.js") as { fromValue(v: string | number): unknown };
/** Encodes a record batch (magic 2) of records made with {@link encodeRecord}. */
export const { RecordBatch } = require("kafkajs/src/protocol/recordBatch/v0/index.js") as {
  RecordBatch: (options: object) => Promise<{ buffer: Buffer }>;
};
/** Encodes one record of a batch: offsetDelta, timestampDelta, key, value, headers. */
export const encodeRecord = require("kafkajs/src/protocol/recordBatch/record/v0/index.js") as (
  record: object,
) => unknown;
/** KafkaJS's consumer batch over one partition's decoded messages. */
export const Batch = require("kafkajs/src/consumer/batch.js") as new (
  topic: string,
  fetchedOffset: string,
  partitionData: object,
) => EachBatchPayload["batch"] & { undecoded: number };

/**
 * A partition's record set as a fetch response carries it: an INT32 size, then `batches` (each an
 * encoded record batch); `cut` drops that many bytes at its end, as a broker cuts the last batch at
 * the fetch size (KIP-74).
 */
export function recordSet(batches: readonly Buffer[], cut = 0): Buffer {
  const all = Buffer.concat(batches);
  const body = all.subarray(0, all.length - cut);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length, 0);
  return Buffer.concat([size, body]);
}
