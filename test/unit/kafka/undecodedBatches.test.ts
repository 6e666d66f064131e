/**
 * KafkaJS patch 009 (replay without decoding, patches/README.md): a fetch response's record
 * batches wholly below the partition's decode floor, at or above the fetch offset, are passed over
 * undecoded, one message each with the batch's offsets and record count; every other batch is
 * decoded as before. Then the feed splits such a KafkaJS batch into an undecoded batch (only the
 * replay fast path may take it) and the decoded rest (issue 27, "Replay without decoding").
 * Responses are built here with KafkaJS's own record batch encoder, byte for byte as a broker
 * sends them.
 */
import { describe, expect, it } from "vitest";
import { fetchedBatches } from "../../../src/kafka/kafkaFeed.js";
import {
  Batch,
  decodeMessages,
  Decoder,
  encodeRecord,
  Long,
  RecordBatch,
  recordSet,
  type Message,
  type Messages,
  type SkipArgs,
} from "../../helpers/kafkajsInternals.js";

const GZIP = 1;
const CONTROL_FLAG = 0x20;

interface BatchSpec {
  readonly first: number;
  readonly values: readonly (string | null)[];
  readonly producerId?: number;
  readonly transactional?: boolean;
  readonly compression?: number;
  /** A transaction marker: one control record, key version 0 and type (0 ABORT, 1 COMMIT). */
  readonly marker?: "ABORT" | "COMMIT";
}

/** One record batch (message format v2) as a broker sends it. */
async function recordBatch(spec: BatchSpec): Promise<Buffer> {
  const values = spec.marker === undefined ? spec.values : [null];
  const records = values.map((value, i) =>
    encodeRecord({
      offsetDelta: i,
      key: spec.marker === undefined ? null : Buffer.from([0, 0, 0, spec.marker === "ABORT" ? 0 : 1]),
      value: value === null ? null : Buffer.from(value),
    }),
  );
  const { buffer: batch } = await RecordBatch({
    firstOffset: Long.fromValue(spec.first),
    lastOffsetDelta: values.length - 1,
    transactional: spec.transactional ?? spec.marker !== undefined,
    producerId: Long.fromValue(spec.producerId ?? -1),
    compression: spec.compression ?? 0,
    records,
  });
  if (spec.marker !== undefined) batch.writeInt16BE(batch.readInt16BE(21) | CONTROL_FLAG, 21);
  return batch;
}

/** A partition's record set of these batches; `cut` drops bytes at its end (KIP-74). */
async function encodedSet(specs: readonly BatchSpec[], cut = 0): Promise<Buffer> {
  return recordSet(await Promise.all(specs.map(recordBatch)), cut);
}

async function decode(specs: readonly BatchSpec[], skip?: Partial<SkipArgs>, cut = 0): Promise<Messages> {
  const context =
    skip === undefined
      ? undefined
      : decodeMessages.skipContext({
          fetchOffset: "0",
          decodeFloor: "0",
          highWatermark: "1000",
          abortedTransactions: [],
          ...skip,
        });
  return decodeMessages(new Decoder(await encodedSet(specs, cut)), context);
}

const three = (first: number, extra: Partial<BatchSpec> = {}): BatchSpec => ({
  first,
  values: [`v${first}`, `v${first + 1}`, `v${first + 2}`],
  ...extra,
});

const shape = (messages: readonly Message[]): unknown[] =>
  messages.map((m) =>
    m.undecoded === undefined ? m.offset : `${m.undecoded.firstOffset}-${m.offset}x${m.undecoded.count}`,
  );

describe("KafkaJS patch 009: record batches below the decode floor", () => {
  it("passes over the batches wholly below the floor and decodes the rest", async () => {
    const messages = await decode([three(0), three(3), three(6)], { decodeFloor: "6" });
    expect(shape(messages)).toEqual(["0-2x3", "3-5x3", "6", "7", "8"]);
    expect(messages.undecoded).toBe(2);
    expect(messages.slice(2).map((m) => m.value?.toString())).toEqual(["v6", "v7", "v8"]);
  });

  it("decodes everything without a floor, or when the floor is above the high watermark (a truncated or recreated topic)", async () => {
    const all = ["0", "1", "2", "3", "4", "5"];
    expect(shape(await decode([three(0), three(3)]))).toEqual(all);
    expect(shape(await decode([three(0), three(3)], { decodeFloor: "6", highWatermark: "5" }))).toEqual(all);
  });

  it("decodes a batch that reaches the floor, and one that begins below the fetch offset", async () => {
    expect(shape(await decode([three(0), three(3)], { decodeFloor: "5" }))).toEqual(["0-2x3", "3", "4", "5"]);
    expect(shape(await decode([three(0), three(3)], { fetchOffset: "1", decodeFloor: "6" }))).toEqual([
      "0",
      "1",
      "2",
      "3-5x3",
    ]);
  });

  it("decodes transaction markers and the batches of producers with an aborted transaction in the response", async () => {
    const specs: BatchSpec[] = [
      three(0, { transactional: true, producerId: 7 }),
      three(3, { transactional: true, producerId: 8 }),
      { first: 6, values: [], producerId: 7, marker: "ABORT" },
      { first: 7, values: [], producerId: 8, marker: "COMMIT" },
    ];
    const messages = await decode(specs, {
      decodeFloor: "8",
      abortedTransactions: [{ producerId: "7", firstOffset: "0" }],
    });
    expect(shape(messages)).toEqual(["0", "1", "2", "3-5x3", "6", "7"]);
    expect(messages.filter((m) => m.isControlRecord).map((m) => m.offset)).toEqual(["6", "7"]);
  });

  it("counts a compressed batch's records from its header without decompressing it", async () => {
    const compressed = { first: 0, values: ["a", "b", "c", "d"], compression: GZIP };
    expect(shape(await decode([compressed, three(4)], { decodeFloor: "4" }))).toEqual([
      "0-3x4",
      "4",
      "5",
      "6",
    ]);
  });

  it("leaves a batch cut short at the end of the response to KafkaJS, as before", async () => {
    const messages = await decode([three(0), three(3)], { decodeFloor: "6" }, 5);
    expect(shape(messages)).toEqual(["0-2x3"]);
    expect(messages.lastBatchOffset).toBe("2");
  });
});

describe("the feed's batches of a KafkaJS batch with undecoded record batches", () => {
  async function kafkajsBatch(specs: readonly BatchSpec[], skip: Partial<SkipArgs>, fetchOffset = "0") {
    const messages = await decode(specs, { fetchOffset, ...skip });
    return new Batch("t", fetchOffset, {
      partition: 0,
      highWatermark: skip.highWatermark ?? "1000",
      abortedTransactions: skip.abortedTransactions ?? [],
      messages,
    });
  }

  it("hands over the undecoded part as one counted batch and the decoded rest as another", async () => {
    const batch = await kafkajsBatch([three(0), three(3), three(6)], { decodeFloor: "6" });
    const [undecoded, rest, ...more] = fetchedBatches(batch, 4, batch.lastOffset());
    expect(more).toEqual([]);
    expect(undecoded).toMatchObject({
      generation: 4,
      firstOffset: "0",
      lastOffset: "5",
      throughOffset: "5",
      size: 6,
      undecoded: true,
    });
    expect(() => undecoded!.records).toThrow(/undecoded/);
    expect(rest).toMatchObject({ firstOffset: "6", lastOffset: "8", throughOffset: "8", size: 3 });
    expect(rest!.undecoded).toBeUndefined();
    expect(rest!.records.map((r) => r.offset)).toEqual(["6", "7", "8"]);
  });

  it("counts decoded records below the floor into the undecoded batch, and ends with the markers after it", async () => {
    const specs: BatchSpec[] = [
      three(0, { transactional: true, producerId: 7 }),
      three(3),
      { first: 6, values: [], producerId: 7, marker: "ABORT" },
    ];
    const aborted = [{ producerId: "7", firstOffset: "0" }];
    const batch = await kafkajsBatch(specs, { decodeFloor: "7", abortedTransactions: aborted });
    expect(batch.lastOffset()).toBe("6");
    const parts = fetchedBatches(batch, 1, batch.lastOffset());
    // The aborted records 0-2 are filtered out, 3-5 undecoded, the ABORT marker at 6 moves the end.
    expect(
      parts.map((p) => [p.firstOffset, p.lastOffset, p.throughOffset, p.size, p.undecoded === true]),
    ).toEqual([
      ["3", "5", "5", 3, true],
      ["6", "6", "6", 0, false],
    ]);
  });

  it("hands over a batch with nothing undecoded as one batch, as before", async () => {
    const batch = await kafkajsBatch([three(0)], { decodeFloor: "2" });
    const parts = fetchedBatches(batch, 1, batch.lastOffset());
    expect(parts).toHaveLength(1);
    expect(parts[0]).toMatchObject({ firstOffset: "0", lastOffset: "2", throughOffset: "2", size: 3 });
    expect(parts[0]!.undecoded).toBeUndefined();
  });
});
