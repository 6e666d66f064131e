/**
 * KafkaJS patch 012 (record batches handed over as bytes, patches/README.md) and the decoder of
 * src/kafka/recordBatch.ts that reads them into the engine's records (issue 27, "A leaner apply
 * path"). Every record must come out exactly as KafkaJS's own decoder and toRecord give it: the
 * same offsets, timestamps, keys, values, headers (null values, repeated and odd names) and sizes.
 * Batches are built with KafkaJS's own record batch encoder, byte for byte as a broker sends them;
 * test/integration/engine/recordBatchesAsBytes.test.ts reads them from a real broker.
 */
import { describe, expect, it } from "vitest";
import { fetchedBatches } from "../../../src/kafka/kafkaFeed.js";
import {
  decodeRecordBatch,
  recordBatchBounds,
  type RecordBatchBytes,
} from "../../../src/kafka/recordBatch.js";
import { toRecord } from "../../../src/kafka/toRecord.js";
import {
  RECORD_BYTES,
  RECORD_HEADER_COUNT,
  type KafkaRecord,
  type SizedRecord,
} from "../../../src/record.js";
import {
  Batch,
  decodeMessages,
  Decoder,
  encodeRecord,
  Long,
  RecordBatch,
  recordSet,
  type FetchContextArgs,
  type Messages,
} from "../../helpers/kafkajsInternals.js";

type Headers = Record<string, Buffer | null | (Buffer | null)[]>;

const GZIP = 1;
const LOG_APPEND_TIME_FLAG = 0x08;
const CONTROL_FLAG = 0x20;

interface RecordSpec {
  readonly offsetDelta: number;
  readonly timestampDelta?: number;
  readonly key?: string | null;
  readonly value?: string | null;
  readonly headers?: Headers;
}
interface BatchSpec {
  readonly first: string;
  readonly records: readonly RecordSpec[];
  /** The batch's last offset delta; the last record's offset delta when not given. */
  readonly lastOffsetDelta?: number;
  readonly firstTimestamp?: string;
  readonly producerId?: number;
  readonly transactional?: boolean;
  readonly compression?: number;
  readonly logAppendTime?: boolean;
  readonly control?: boolean;
}

const text = (s: string | null | undefined): Buffer | null =>
  s === undefined ? Buffer.from("v") : s === null ? null : Buffer.from(s);

/** One record batch (message format v2) as a broker sends it. */
async function recordBatch(spec: BatchSpec): Promise<Buffer> {
  const records = spec.records.map((r) =>
    encodeRecord({
      offsetDelta: r.offsetDelta,
      timestampDelta: r.timestampDelta ?? r.offsetDelta,
      key: text(r.key),
      value: text(r.value),
      headers: r.headers ?? {},
    }),
  );
  const { buffer: batch } = await RecordBatch({
    firstOffset: Long.fromValue(spec.first),
    firstTimestamp: Long.fromValue(spec.firstTimestamp ?? "1700000000000"),
    maxTimestamp: Long.fromValue("1800000000000"),
    lastOffsetDelta: spec.lastOffsetDelta ?? spec.records.at(-1)?.offsetDelta ?? 0,
    transactional: spec.transactional ?? false,
    producerId: Long.fromValue(spec.producerId ?? -1),
    compression: spec.compression ?? 0,
    records,
  });
  const flags =
    (spec.logAppendTime === true ? LOG_APPEND_TIME_FLAG : 0) | (spec.control === true ? CONTROL_FLAG : 0);
  batch.writeInt16BE(batch.readInt16BE(21) | flags, 21);
  return batch;
}

/** A partition's record set of these batches; `cut` drops bytes at its end (KIP-74). */
async function encodedSet(specs: readonly BatchSpec[], cut = 0): Promise<Buffer> {
  return recordSet(await Promise.all(specs.map(recordBatch)), cut);
}

async function decode(
  specs: readonly BatchSpec[] | Buffer,
  args: Partial<FetchContextArgs> | undefined,
  cut = 0,
): Promise<Messages> {
  const context =
    args === undefined
      ? undefined
      : decodeMessages.fetchContext({
          fetchOffset: "0",
          recordBatchesAsBytes: true,
          highWatermark: "1000",
          abortedTransactions: [],
          ...args,
        });
  const set = Buffer.isBuffer(specs) ? specs : await encodedSet(specs, cut);
  return decodeMessages(new Decoder(set), context);
}

/** The records as KafkaJS's decoder and toRecord give them, and as the patch and recordBatch.ts do. */
async function bothWays(
  specs: readonly BatchSpec[] | Buffer,
): Promise<{ theirs: SizedRecord[]; ours: SizedRecord[] }> {
  const theirs = (await decode(specs, undefined)).map((m) => toRecord("t", 3, m));
  const messages = await decode(specs, {});
  expect(messages.asBytes).toBe(messages.length);
  const ours = messages.flatMap((m) => decodeRecordBatch("t", 3, m.recordBatch!));
  return { theirs, ours };
}

const hex = (b: Buffer | null): string | null => b?.toString("hex") ?? null;
const fields = (r: SizedRecord): unknown => ({
  topic: r.topic,
  partition: r.partition,
  offset: r.offset,
  timestamp: r.timestamp,
  key: hex(r.key),
  value: hex(r.value),
  headers: Object.entries(r.headers).map(([name, values]) => [name, values.map(hex)]),
  prototype: Object.getPrototypeOf(r.headers) as unknown,
  bytes: r[RECORD_BYTES],
  headerCount: r[RECORD_HEADER_COUNT],
});

const ledgerHeaders = (i: number): Headers => ({
  ce_specversion: Buffer.from("1.0"),
  ce_id: Buffer.from(`id-${i}`),
  ce_type: Buffer.from("ledger.account.credited"),
});

describe("patch 012 and recordBatch.ts: the records, as KafkaJS gives them", () => {
  it("decodes keys, values, timestamps and repeated, null-valued and odd header names alike", async () => {
    // Own properties, not the prototype's: a headers object without one.
    const odd = Object.setPrototypeOf(
      Object.fromEntries([
        ["__proto__", Buffer.from("p")],
        ["toString", [null, Buffer.from("x"), null]],
        ["é", Buffer.alloc(0)],
      ]),
      null,
    ) as Headers;
    const { theirs, ours } = await bothWays([
      {
        first: "10",
        records: [
          { offsetDelta: 0, headers: ledgerHeaders(0) },
          { offsetDelta: 1, key: null, value: null, headers: ledgerHeaders(1) },
          { offsetDelta: 2, key: "", value: "", headers: odd },
          { offsetDelta: 3, timestampDelta: -5, headers: { ...ledgerHeaders(3), extra: null } },
          { offsetDelta: 4, value: "x".repeat(70_000) },
        ],
      },
    ]);
    expect(ours.map(fields)).toEqual(theirs.map(fields));
    expect(ours.map((r) => r.offset)).toEqual(["10", "11", "12", "13", "14"]);
    expect(ours[3]!.timestamp).toBe("1699999999995");
    expect(Object.getOwnPropertyDescriptor(ours[2]!.headers, "toString")?.value).toEqual([
      null,
      Buffer.from("x"),
      null,
    ]);
  });

  it("keeps offsets and timestamps past 2^53 exact, and offset gaps that compaction leaves", async () => {
    const { theirs, ours } = await bothWays([
      {
        first: "9007199254740993",
        firstTimestamp: "9007199254740993",
        records: [{ offsetDelta: 0 }, { offsetDelta: 7, timestampDelta: 2 ** 40 }, { offsetDelta: 9 }],
        lastOffsetDelta: 12,
      },
    ]);
    expect(ours.map(fields)).toEqual(theirs.map(fields));
    expect(ours.map((r) => r.offset)).toEqual(["9007199254740993", "9007199254741000", "9007199254741002"]);
    expect(ours[1]!.timestamp).toBe("9008298766368769");
  });

  it("gives every record the batch's max timestamp under LogAppendTime (KIP-32)", async () => {
    const { theirs, ours } = await bothWays([
      { first: "0", logAppendTime: true, records: [{ offsetDelta: 0 }, { offsetDelta: 1 }] },
    ]);
    expect(ours.map(fields)).toEqual(theirs.map(fields));
    expect(ours.map((r) => r.timestamp)).toEqual(["1800000000000", "1800000000000"]);
  });

  it("hands a gzip-compressed batch over decompressed", async () => {
    const records = Array.from({ length: 50 }, (_, i) => ({ offsetDelta: i, headers: ledgerHeaders(i) }));
    const { theirs, ours } = await bothWays([
      { first: "100", compression: GZIP, records },
      { first: "150", records: records.slice(0, 2) },
    ]);
    expect(ours).toHaveLength(52);
    expect(ours.map(fields)).toEqual(theirs.map(fields));
  });

  /**
   * A record set of one batch whose records each carry one header with a one-byte name: the
   * encoder writes the names as ASCII placeholders, then each is replaced by the byte given.
   */
  async function withNameBytes(names: readonly { readonly text: string; readonly byte?: number }[]) {
    const records = names.map(({ text }, i) => ({
      offsetDelta: i,
      headers: { [text]: Buffer.from(String.fromCharCode(0x61 + i)) },
    }));
    const set = await encodedSet([{ first: "0", records }]);
    names.forEach(({ text, byte }, i) => {
      if (byte === undefined) return;
      // The header as written: name length 1 (varint 2), the name, value length 1, the value.
      set[set.lastIndexOf(Buffer.from([2, text.charCodeAt(0), 2, 0x61 + i])) + 1] = byte;
    });
    return bothWays(set);
  }

  it("decodes a header name whose bytes are not UTF-8 as KafkaJS does, after a record whose name had as many characters", async () => {
    // 0xE9 alone is "é" in Latin-1, not UTF-8 ("é" is C3 A9): U+FFFD, not the previous name.
    const { theirs, ours } = await withNameBytes([{ text: "é" }, { text: "Z", byte: 0xe9 }]);
    expect(ours.map((r) => Object.keys(r.headers))).toEqual([["é"], ["\uFFFD"]]);
    // The name's size is the UTF-8 of its text (3 bytes), on either path (break-it review).
    expect(ours.map(fields)).toEqual(theirs.map(fields));
    expect(ours[1]![RECORD_BYTES]).toBe(1 + 1 + 3 + 1);
  });

  it("counts each of two records' invalid header names as U+FFFD's UTF-8, the second equal to the first as text", async () => {
    const { theirs, ours } = await withNameBytes([
      { text: "Y", byte: 0xff },
      { text: "Z", byte: 0xfe },
    ]);
    expect(ours.map((r) => Object.keys(r.headers))).toEqual([["\uFFFD"], ["\uFFFD"]]);
    expect(ours.map((r) => r[RECORD_BYTES])).toEqual([1 + 1 + 3 + 1, 1 + 1 + 3 + 1]);
    expect(ours.map(fields)).toEqual(theirs.map(fields));
  });

  it("finds the first and last record's offsets without decoding the records between", async () => {
    const [message] = await decode(
      [
        {
          first: "40",
          records: [{ offsetDelta: 2 }, { offsetDelta: 3 }, { offsetDelta: 8 }],
          lastOffsetDelta: 9,
        },
      ],
      {},
    );
    expect(message!.offset).toBe("49");
    expect(recordBatchBounds(message!.recordBatch!)).toEqual({
      firstOffset: "42",
      lastOffset: "48",
      count: 3,
    });
  });

  it("refuses records whose lengths do not add up to the batch's bytes, naming the batch", async () => {
    const [message] = await decode([{ first: "7", records: [{ offsetDelta: 0 }, { offsetDelta: 1 }] }], {});
    const batch = message!.recordBatch!;
    const short: RecordBatchBytes = {
      ...batch,
      records: batch.records.subarray(0, batch.records.length - 1),
    };
    expect(() => decodeRecordBatch("t", 0, short)).toThrow(
      /record batch at offset 7 is malformed \(record 1 of 2\)/,
    );
    expect(() => recordBatchBounds(short)).toThrow(/malformed/);
    const more: RecordBatchBytes = { ...batch, count: 1 };
    expect(() => decodeRecordBatch("t", 0, more)).toThrow(/bytes after its last record/);
  });
});

describe("patch 012: which record batches KafkaJS still decodes", () => {
  const three = (first: number, extra: Partial<BatchSpec> = {}): BatchSpec => ({
    first: String(first),
    records: [0, 1, 2].map((offsetDelta) => ({ offsetDelta })),
    ...extra,
  });
  const shape = (messages: Messages): string[] =>
    messages.map((m) =>
      m.undecoded !== undefined
        ? `undecoded ${m.undecoded.firstOffset}-${m.offset}`
        : m.recordBatch === undefined
          ? m.offset
          : `${m.recordBatch.firstOffset}-${m.offset}x${m.recordBatch.count}`,
    );

  it("only when asked: without the option every batch is decoded as before", async () => {
    expect(shape(await decode([three(0), three(3)], undefined))).toEqual(["0", "1", "2", "3", "4", "5"]);
    expect(shape(await decode([three(0), three(3)], { recordBatchesAsBytes: false }))).toEqual([
      "0",
      "1",
      "2",
      "3",
      "4",
      "5",
    ]);
  });

  it("decodes transaction markers and the batches of a producer with an aborted transaction in the response", async () => {
    const messages = await decode(
      [
        three(0, { transactional: true, producerId: 7 }),
        three(3, { transactional: true, producerId: 8 }),
        {
          first: "6",
          records: [{ offsetDelta: 0, key: "\u0000\u0000\u0000\u0000" }],
          producerId: 7,
          transactional: true,
          control: true,
        },
        three(7),
      ],
      { abortedTransactions: [{ producerId: "7", firstOffset: "0" }] },
    );
    expect(shape(messages)).toEqual(["0", "1", "2", "3-5x3", "6", "7-9x3"]);
    expect(messages.asBytes).toBe(2);
    expect(messages.filter((m) => m.isControlRecord).map((m) => m.offset)).toEqual(["6"]);
  });

  it("decodes a batch that begins below the fetch offset, and leaves one cut short to KafkaJS", async () => {
    expect(shape(await decode([three(0), three(3)], { fetchOffset: "1" }))).toEqual(["0", "1", "2", "3-5x3"]);
    const cut = await decode([three(0), three(3)], {}, 5);
    expect(shape(cut)).toEqual(["0-2x3"]);
    expect(cut.lastBatchOffset).toBe("2");
  });

  it("passes over batches below the decode floor first (patch 009), and hands over the rest as bytes", async () => {
    const messages = await decode([three(0), three(3), three(6)], { decodeFloor: "3" });
    expect(shape(messages)).toEqual(["undecoded 0-2", "3-5x3", "6-8x3"]);
    expect(messages[0]!.undecoded).toEqual({ firstOffset: "0", count: 3 });
    expect(messages.asBytes).toBe(2);
  });
});

describe("the feed's batch of a KafkaJS batch with record batches as bytes", () => {
  it("counts, bounds and decodes them in offset order among the messages KafkaJS decoded", async () => {
    const specs: BatchSpec[] = [
      { first: "0", records: [{ offsetDelta: 1 }, { offsetDelta: 2 }], lastOffsetDelta: 2 },
      { first: "3", records: [{ offsetDelta: 0 }], producerId: 7, transactional: true },
      { first: "4", records: [{ offsetDelta: 0 }, { offsetDelta: 3 }], lastOffsetDelta: 4 },
    ];
    const aborted = [{ producerId: "7", firstOffset: "9" }];
    const messages = await decode(specs, { abortedTransactions: aborted });
    expect(messages.map((m) => m.recordBatch !== undefined)).toEqual([true, false, true]);
    const batch = new Batch("t", "0", {
      partition: 3,
      highWatermark: "20",
      abortedTransactions: [],
      messages,
    });
    const [fetched, ...more] = fetchedBatches(batch, 2, batch.lastOffset());
    expect(more).toEqual([]);
    expect(fetched).toMatchObject({ firstOffset: "1", lastOffset: "7", throughOffset: "8", size: 5 });
    const expected = (await decode(specs, undefined)).map((m) => toRecord("t", 3, m));
    expect(fetched!.records.map((r) => fields(r as SizedRecord))).toEqual(expected.map(fields));
    expect(fetched!.records.map((r: KafkaRecord) => r.offset)).toEqual(["1", "2", "3", "4", "7"]);
  });
});
