/**
 * What handing fetched records to a second JavaScript thread costs (issue 27's "second thread"
 * design input): batches of 2,000 ledger-shaped records (a 12-byte key, a value of `--value-bytes`,
 * four CloudEvents header values, offset and timestamp strings) are posted to a worker thread either
 * as they are (`clone`: structured clone of the records array) or packed into one ArrayBuffer that is
 * transferred (`packed`: keys, values and header values copied into it, an Int32Array of their ends,
 * the offsets and timestamps as string arrays); the worker reads one byte of each value. Reports
 * the main thread's synchronous time per record (serialising or packing and posting) and the whole
 * process's CPU per record (both threads, GC included) from the first post to the last answer.
 * No broker, no database. Run: `npx tsx bench/workerHandoff.ts 200 700 4096`.
 */
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";

const RECORDS = 2000;
const BATCHES = 60;

/** A record as toRecord makes it, without the class. */
interface Shaped {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer;
  readonly value: Buffer;
  readonly headers: Record<string, Buffer[]>;
}

/** A batch packed into one transferable buffer. */
interface Packed {
  readonly bytes: ArrayBuffer;
  /** Per record: the end of its key, value and four header values in `bytes`. */
  readonly ends: ArrayBuffer;
  readonly offsets: string[];
  readonly timestamps: string[];
}

const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
parentPort.on("message", (m) => {
  let sum = 0;
  if (workerData === "clone") for (const r of m) sum += r.value[5] + r.headers.ce_id[0].length;
  else {
    const bytes = Buffer.from(m.bytes);
    const ends = new Int32Array(m.ends);
    for (let i = 0; i < m.offsets.length; i++) sum += bytes[ends[i * 6] + 5];
  }
  parentPort.postMessage(sum);
});
`;

function batch(valueBytes: number, first: number): Shaped[] {
  const fetched = Buffer.alloc(valueBytes + 100, 120);
  return Array.from({ length: RECORDS }, (_, i) => ({
    topic: "ledger",
    partition: 3,
    offset: String(first + i),
    timestamp: String(1_733_356_800_000 + i),
    key: fetched.subarray(0, 12),
    value: fetched.subarray(12, 12 + valueBytes),
    headers: {
      ce_specversion: [fetched.subarray(0, 3)],
      ce_id: [fetched.subarray(3, 23)],
      ce_source: [fetched.subarray(23, 33)],
      ce_type: [fetched.subarray(33, 57)],
    },
  }));
}

function pack(records: readonly Shaped[]): Packed {
  let size = 0;
  for (const r of records) {
    size += r.key.length + r.value.length;
    for (const values of Object.values(r.headers)) for (const v of values) size += v.length;
  }
  const bytes = Buffer.allocUnsafeSlow(size);
  const ends = new Int32Array(records.length * 6);
  let at = 0;
  let e = 0;
  for (const r of records) {
    at += r.key.copy(bytes, at);
    ends[e++] = at;
    at += r.value.copy(bytes, at);
    ends[e++] = at;
    for (const values of Object.values(r.headers)) {
      at += values[0]!.copy(bytes, at);
      ends[e++] = at;
    }
  }
  return {
    bytes: bytes.buffer,
    ends: ends.buffer,
    offsets: records.map((r) => r.offset),
    timestamps: records.map((r) => r.timestamp),
  };
}

async function measure(mode: "clone" | "packed", valueBytes: number): Promise<string> {
  const worker = new Worker(WORKER, { eval: true, workerData: mode });
  const batches = Array.from({ length: BATCHES }, (_, i) => batch(valueBytes, i * RECORDS));
  let answered = 0;
  const done = new Promise<void>((resolve) =>
    worker.on("message", () => {
      answered += 1;
      if (answered === BATCHES) resolve();
    }),
  );
  let senderMs = 0;
  const cpu = process.cpuUsage();
  for (const records of batches) {
    const started = performance.now();
    if (mode === "clone") worker.postMessage(records);
    else {
      const packed = pack(records);
      worker.postMessage(packed, [packed.bytes, packed.ends]);
    }
    senderMs += performance.now() - started;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await done;
  const used = process.cpuUsage(cpu);
  await worker.terminate();
  const n = RECORDS * BATCHES;
  return `${String(valueBytes).padStart(5)} B  ${mode.padEnd(6)}  main thread ${((senderMs * 1000) / n).toFixed(2)} µs/record  process CPU ${((used.user + used.system) / n).toFixed(2)} µs/record`;
}

const sizes = process.argv.slice(2).map(Number);
for (const valueBytes of sizes.length > 0 ? sizes : [200, 700, 4096]) {
  for (const mode of ["clone", "packed"] as const) console.log(await measure(mode, valueBytes));
}
