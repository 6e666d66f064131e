/**
 * A partition's fetch as the @platformatic/kafka feed hands it over (`fetchedBatch`,
 * src/kafka/platformatic/platformaticFeed.ts): offsets past trailing markers and aborted records,
 * records below the fetch offset left out, a fetch of markers only as a batch of size 0, and
 * records converted as the engine reads them (src/record.ts).
 */
import type { RecordsBatch } from "@platformatic/kafka";
import { describe, expect, it } from "vitest";
import { fetchedBatch } from "../../../../src/kafka/platformatic/platformaticFeed.js";
import {
  RECORD_BYTES,
  RECORD_HEADER_COUNT,
  headerValues,
  recordBytes,
  type KafkaRecord,
  type SizedRecord,
} from "../../../../src/record.js";

const TRANSACTIONAL = 1 << 4;
const CONTROL = 1 << 5;
const LOG_APPEND_TIME = 1 << 3;
const tp = { topic: "t", partition: 2 };

/** A record batch at `offset` with one record per value (`headers` on each). */
function batch(
  offset: number,
  values: (string | null)[],
  options: { pid?: number; attributes?: number; headers?: [Buffer | null, Buffer | null][] } = {},
): RecordsBatch {
  return {
    firstOffset: BigInt(offset),
    length: 0,
    partitionLeaderEpoch: 0,
    magic: 2,
    crc: 0,
    attributes: options.attributes ?? (options.pid !== undefined ? TRANSACTIONAL : 0),
    lastOffsetDelta: Math.max(0, values.length - 1),
    firstTimestamp: 1_000n,
    maxTimestamp: 9_000n,
    producerId: BigInt(options.pid ?? -1),
    producerEpoch: 0,
    firstSequence: 0,
    records: values.map((value, i) => ({
      length: 0,
      attributes: 0,
      timestampDelta: BigInt(i),
      offsetDelta: i,
      key: Buffer.from(`k${i}`),
      value: value === null ? null : Buffer.from(value),
      headers: options.headers ?? [],
    })),
  };
}

function abortMarker(offset: number, pid: number): RecordsBatch {
  const b = batch(offset, ["x"], { attributes: TRANSACTIONAL | CONTROL, pid });
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 2);
  return { ...b, records: [{ ...b.records[0]!, key }] };
}

describe("fetchedBatch", () => {
  it("covers the offsets up to the last batch's end, past a trailing aborted transaction and its marker", () => {
    const fetched = fetchedBatch(
      tp,
      3,
      0n,
      20n,
      [batch(0, ["a", "b"]), batch(2, ["c"], { pid: 9 }), abortMarker(3, 9)],
      [{ producerId: 9n, firstOffset: 2n }],
    )!;
    expect(fetched).toMatchObject({
      generation: 3,
      highWatermark: "20",
      firstOffset: "0",
      lastOffset: "1",
      throughOffset: "3",
      size: 2,
    });
    expect(fetched.records.map((r) => r.value?.toString())).toEqual(["a", "b"]);
  });

  it("leaves out the records below the fetch offset (a compressed batch that begins before it)", () => {
    const fetched = fetchedBatch(tp, 1, 5n, 10n, [batch(3, ["a", "b", "c", "d"])], null)!;
    expect(fetched).toMatchObject({ firstOffset: "5", lastOffset: "6", throughOffset: "6", size: 2 });
    expect(fetched.records.map((r) => r.offset)).toEqual(["5", "6"]);
  });

  it("hands a fetch of markers and aborted records only over as a batch of size 0 that moves the offset", () => {
    const fetched = fetchedBatch(
      tp,
      1,
      7n,
      10n,
      [batch(7, ["x"], { pid: 4 }), abortMarker(8, 4)],
      [{ producerId: 4n, firstOffset: 7n }],
    )!;
    expect(fetched).toMatchObject({ firstOffset: "8", lastOffset: "8", throughOffset: "8", size: 0 });
    expect(fetched.records).toEqual([]);
  });

  it("hands nothing over for a fetch without a whole record batch", () => {
    expect(fetchedBatch(tp, 1, 7n, 10n, [], null)).toBeUndefined();
  });

  it("converts records as the engine reads them: null-prototype headers, repeated names, null values, sizes", () => {
    const headers: [Buffer | null, Buffer | null][] = [
      [Buffer.from("h"), Buffer.from("1")],
      [Buffer.from("h"), null],
      [Buffer.from("__proto__"), Buffer.from("p")],
    ];
    const fetched = fetchedBatch(tp, 1, 0n, 1n, [batch(0, [null], { headers })], null)!;
    const record = fetched.records[0] as SizedRecord;
    expect(Object.getPrototypeOf(record.headers)).toBeNull();
    expect(headerValues(record, "h")).toEqual([Buffer.from("1"), null]);
    expect(headerValues(record, "__proto__")).toEqual([Buffer.from("p")]);
    expect(record).toMatchObject({ topic: "t", partition: 2, offset: "0", timestamp: "1000", value: null });
    expect(record.key).toEqual(Buffer.from("k0"));
    expect(record[RECORD_HEADER_COUNT]).toBe(3);
    expect(record[RECORD_BYTES]).toBe(2 + 1 + 1 + 1 + 9 + 1);
  });

  it("counts a header name that is not UTF-8 as its text's UTF-8, as recordBytes and the KafkaJS path do", () => {
    const headers: [Buffer | null, Buffer | null][] = [[Buffer.from([0xff]), Buffer.from("b")]];
    const record = fetchedBatch(tp, 1, 0n, 1n, [batch(0, [null], { headers })], null)!
      .records[0] as SizedRecord;
    expect(Object.keys(record.headers)).toEqual(["\uFFFD"]);
    const { [RECORD_BYTES]: counted, ...plain } = record;
    expect(counted).toBe(2 + 3 + 1);
    expect(recordBytes(plain as KafkaRecord)).toBe(counted);
  });

  it("takes a LogAppendTime batch's max timestamp as each record's timestamp", () => {
    const fetched = fetchedBatch(
      tp,
      1,
      0n,
      2n,
      [batch(0, ["a", "b"], { attributes: LOG_APPEND_TIME })],
      null,
    )!;
    expect(fetched.records.map((r) => r.timestamp)).toEqual(["9000", "9000"]);
  });
});
