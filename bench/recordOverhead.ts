/**
 * Node's memory per fetched record besides its wire bytes, the NODE_BYTES_PER_RECORD of
 * src/engine/memoryPlan.ts: builds record batches of ledger-like records (a key, a value of
 * `--value-bytes`, the four CloudEvents headers) with KafkaJS's own encoder, decodes them as a fetch
 * does, converts them with toRecord, and reports the heap and external memory they hold per record
 * besides the response buffers (the decoded keys, values and headers are views of those).
 * No broker. Run: `node --expose-gc --import tsx bench/recordOverhead.ts 200 700 4096`.
 */
import { toRecord } from "../src/kafka/toRecord.js";
import { decodeMessages, Decoder, Encoder, Long, Record, RecordBatch } from "./kafkajsInternals.js";

const RECORDS = 2000;
const BATCHES = 10;

async function fetchResponse(valueBytes: number): Promise<Buffer> {
  const records = Array.from({ length: RECORDS }, (_, i) =>
    Record({
      offsetDelta: i,
      timestampDelta: 0,
      key: Buffer.from(`account-${i % 97}`),
      value: Buffer.alloc(valueBytes, "x"),
      headers: {
        ce_specversion: Buffer.from("1.0"),
        ce_id: Buffer.from(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}`),
        ce_source: Buffer.from("/replayable/produce"),
        ce_type: Buffer.from("ledger.deposited"),
      },
    }),
  );
  const batch = await RecordBatch({
    firstOffset: Long.fromValue("0"),
    lastOffsetDelta: RECORDS - 1,
    records,
  });
  return Buffer.from(new Encoder().writeBytes(batch.buffer).buffer);
}

async function measure(valueBytes: number): Promise<Record<string, number>> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with node --expose-gc");
  const wires: Buffer[] = [];
  for (let i = 0; i < BATCHES; i++) wires.push(await fetchResponse(valueBytes));
  const wireBytes = wires.reduce((n, w) => n + w.length, 0);
  // Twice, and after a turn of the event loop: the encoders' buffers are freed late.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  gc();
  const before = process.memoryUsage();
  const held: unknown[] = [];
  for (const wire of wires) {
    const messages = await decodeMessages(new Decoder(wire));
    held.push(
      messages,
      messages.map((m) => toRecord("t", 0, m)),
    );
  }
  gc();
  const after = process.memoryUsage();
  const n = RECORDS * BATCHES;
  if (held.length !== 2 * BATCHES) throw new Error("decoded batches went missing");
  return {
    valueBytes,
    wireBytesPerRecord: Math.round(wireBytes / n),
    heapBytesPerRecord: Math.round((after.heapUsed - before.heapUsed) / n),
    externalBytesPerRecord: Math.round((after.external - before.external) / n),
  };
}

for (const arg of process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["200", "700", "4096"])
  process.stdout.write(`${JSON.stringify(await measure(Number(arg)))}\n`);
