/**
 * What decoding a fetched record costs: KafkaJS's record-batch decoder, then toRecord (the member
 * before patch 012, and for the batches KafkaJS still decodes), against the record batch handed
 * over as bytes (patch 012) and decoded straight into the engine's records by
 * src/kafka/recordBatch.ts (issue 27's "a leaner apply path", docs/benchmarks.md "What the member
 * adds, taken apart"). Both give the same records (checked on one batch before timing).
 *
 * Batches of 800 ledger-like records (a key, a value of `--value-bytes`, the four CloudEvents
 * headers) are encoded with KafkaJS's own encoder; each variant decodes all of them `rounds` times
 * after a warm-up. Reports the process's CPU per record (GC included). No broker.
 * Run: `node --import tsx bench/decodeCost.ts 200 700 4096`.
 */
import { decodeRecordBatch } from "../src/kafka/recordBatch.js";
import { toRecord } from "../src/kafka/toRecord.js";
import type { SizedRecord } from "../src/record.js";
import { decodeMessages, Decoder, Encoder, Long, Record, RecordBatch } from "./kafkajsInternals.js";

const RECORDS = 800;
const BATCHES = 50;

async function encodedBatch(valueBytes: number, firstOffset: string): Promise<Buffer> {
  const records = Array.from({ length: RECORDS }, (_, i) =>
    Record({
      offsetDelta: i,
      timestampDelta: i,
      key: Buffer.from(`account-${i % 97}`),
      value: Buffer.alloc(valueBytes, "x"),
      headers: {
        ce_specversion: Buffer.from("1.0"),
        ce_id: Buffer.from(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}`),
        ce_source: Buffer.from("/replayable/produce"),
        ce_type: Buffer.from("ledger.account.credited"),
      },
    }),
  );
  const batch = await RecordBatch({
    firstOffset: Long.fromValue(firstOffset),
    lastOffsetDelta: RECORDS - 1,
    records,
  });
  return Buffer.from(new Encoder().writeBytes(batch.buffer).buffer);
}

/** Patch 012's context for a fetch at offset 0: every whole record batch comes as bytes. */
const AS_BYTES = decodeMessages.fetchContext({
  fetchOffset: "0",
  recordBatchesAsBytes: true,
  highWatermark: "9223372036854775807",
  abortedTransactions: [],
});

/** The records of one encoded batch as the member decodes them now: patch 012, then recordBatch.ts. */
async function leanDecode(topic: string, partition: number, encoded: Buffer): Promise<SizedRecord[]> {
  const [message] = await decodeMessages(new Decoder(encoded), AS_BYTES);
  if (message?.recordBatch === undefined) throw new Error("the batch did not come as bytes (patch 012)");
  return decodeRecordBatch(topic, partition, message.recordBatch);
}

/** Throws unless both decodes give the same offsets, timestamps, keys, values and headers. */
async function checkSame(encoded: Buffer): Promise<void> {
  const theirs = (await decodeMessages(new Decoder(encoded))).map((m) => toRecord("t", 0, m));
  const ours = await leanDecode("t", 0, encoded);
  const shape = (r: {
    offset: string;
    timestamp: string;
    key: Buffer | null;
    value: Buffer | null;
    headers: object;
  }) => JSON.stringify([r.offset, r.timestamp, r.key?.toString("hex"), r.value?.toString("hex"), r.headers]);
  if (theirs.length !== ours.length || theirs.some((r, i) => shape(r) !== shape(ours[i]!)))
    throw new Error("the lean decode differs from KafkaJS's");
}

async function measure(valueBytes: number): Promise<void> {
  const batches: Buffer[] = [];
  for (let i = 0; i < BATCHES; i++)
    batches.push(await encodedBatch(valueBytes, String(2 ** 40 + i * RECORDS)));
  await checkSame(batches[1] as Buffer);
  const rounds = Math.max(20, Math.round(4e6 / (RECORDS * BATCHES * (valueBytes / 200))));
  const variants: [string, () => Promise<unknown>][] = [
    [
      "KafkaJS + toRecord",
      async () => {
        for (const b of batches) (await decodeMessages(new Decoder(b))).map((m) => toRecord("t", 0, m));
      },
    ],
    [
      "KafkaJS alone",
      async () => {
        for (const b of batches) await decodeMessages(new Decoder(b));
      },
    ],
    // Each batch's records let go before the next, as in the variants above.
    [
      "patch 012 + recordBatch.ts",
      async () => {
        for (const b of batches) await leanDecode("t", 0, b);
      },
    ],
  ];
  for (const [label, run] of variants) {
    for (let i = 0; i < 5; i++) await run();
    const before = process.cpuUsage();
    for (let i = 0; i < rounds; i++) await run();
    const used = process.cpuUsage(before);
    const perRecord = (used.user + used.system) / (rounds * RECORDS * BATCHES);
    process.stdout.write(`${valueBytes} B  ${label.padEnd(28)} ${perRecord.toFixed(2)} µs/record\n`);
  }
}

for (const arg of process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["200", "700", "4096"])
  await measure(Number(arg));
