/**
 * A start-up check that the KafkaJS this library loads carries replayable's patches
 * (patches/README.md): an unpatched KafkaJS 2.2.4 delivers aborted records under read_committed
 * and gets stuck behind a compacted empty batch, its offset commits can move a group's offset
 * backwards (patch 006), its header decoding is quadratic (patch 007), and it keeps using a
 * connection whose request timed out (patch 008), and it asks a silent broker for metadata as often
 * as a healthy one (patch 013). npm and pnpm install the patched copy bundled
 * with the package; a package manager that ignores `bundleDependencies` (Yarn 2+) or a hand-made
 * install does not, and this check refuses to consume with it.
 */
import { createRequire } from "node:module";
import { ReplayableError } from "../errors.js";

const require = createRequire(import.meta.url);

interface Message {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly isControlRecord: boolean;
  readonly batchContext: { readonly producerId: string; readonly inTransaction: boolean };
}
type FilterAbortedMessages = (args: {
  messages: Message[];
  abortedTransactions: { producerId: string; firstOffset: string }[];
}) => Message[];
type RecordBatchEncoder = (options: {
  firstOffset: unknown;
  lastOffsetDelta: number;
  records: never[];
}) => Promise<{ buffer: Buffer }>;
interface BatchInstance {
  isEmptyDueToFiltering(): boolean;
  lastOffset(): string;
}
type BatchClass = new (
  topic: string,
  fetchedOffset: string,
  partitionData: { partition: number; highWatermark: string; messages: unknown },
) => BatchInstance;

/** KafkaJS's internal modules the patches change, resolved from the same `kafkajs` as `import "kafkajs"`. */
function kafkajsModule<T>(path: string): T {
  return require(`kafkajs/src/${path}`) as T;
}

/**
 * Patch 001: two producers' aborted transactions interleaved, listed by the broker in the order
 * they were aborted (the later-begun one first). Every record of both must be filtered out.
 */
function filtersInterleavedAbortedTransactions(): boolean {
  const filter = kafkajsModule<FilterAbortedMessages>("consumer/filterAbortedMessages.js");
  const record = (offset: string, producerId: string): Message => ({
    offset,
    key: null,
    isControlRecord: false,
    batchContext: { producerId, inTransaction: true },
  });
  const kept = filter({
    messages: [record("0", "1"), record("1", "2"), record("2", "1"), record("3", "2")],
    abortedTransactions: [
      { producerId: "2", firstOffset: "1" },
      { producerId: "1", firstOffset: "0" },
    ],
  });
  return kept.length === 0;
}

/**
 * Patch 002: a fetch response holding one record batch emptied by compaction (offsets 5 to 7,
 * no records) must let the consumer resolve offset 7, i.e. fetch next from 8.
 */
async function passesOverEmptiedBatch(): Promise<boolean> {
  const Long = kafkajsModule<{ fromValue(v: string): unknown }>("utils/long.js");
  const { RecordBatch } = kafkajsModule<{ RecordBatch: RecordBatchEncoder }>(
    "protocol/recordBatch/v0/index.js",
  );
  const Encoder =
    kafkajsModule<new () => { writeBytes(b: Buffer): { buffer: Buffer } }>("protocol/encoder.js");
  const Decoder = kafkajsModule<new (b: Buffer) => unknown>("protocol/decoder.js");
  const decodeMessages = kafkajsModule<(d: unknown) => Promise<unknown>>(
    "protocol/requests/fetch/v4/decodeMessages.js",
  );
  const Batch = kafkajsModule<BatchClass>("consumer/batch.js");
  const emptied = await RecordBatch({ firstOffset: Long.fromValue("5"), lastOffsetDelta: 2, records: [] });
  const recordSet = new Encoder().writeBytes(emptied.buffer).buffer;
  const messages = await decodeMessages(new Decoder(recordSet));
  const batch = new Batch("t", "5", { partition: 0, highWatermark: "100", messages });
  return batch.isEmptyDueToFiltering() && batch.lastOffset() === "7";
}

/**
 * Patch 003: the consumer group wakes fetchers idle on paused partitions when one is resumed
 * (`waitIdle`), and the runner drops a batch fetched before a group join (checked by the
 * `offsetManager` stamp that patch adds in `ConsumerGroup#fetch`, visible in its source).
 */
function hasLanesAndGenerations(): boolean {
  const ConsumerGroup = kafkajsModule<{ prototype: Record<string, unknown> }>("consumer/consumerGroup.js");
  const Runner = kafkajsModule<{ prototype: { handleBatch: () => unknown } }>("consumer/runner.js");
  return (
    typeof ConsumerGroup.prototype.waitIdle === "function" &&
    Runner.prototype.handleBatch
      .toString()
      .includes("batch.offsetManager !== this.consumerGroup.offsetManager")
  );
}

/**
 * Patch 005: the consumer has `setFetchLimits`, and `run()` builds its consumer group from the
 * limits it sets (visible in the consumer factory's source), so they survive a restart.
 */
function hasFetchLimits(): boolean {
  const createConsumer = kafkajsModule<() => unknown>("consumer/index.js");
  const source = createConsumer.toString();
  return (
    source.includes("const setFetchLimits") &&
    source.includes("maxBytesPerPartition: fetchLimits.maxBytesPerPartition")
  );
}

/**
 * Patch 006: the consumer has `commitOffsetsOfGeneration`, and the GROUP_JOIN event names the
 * join's generation id (both visible in their sources). Without them an offset commit could go out
 * with a later generation's id and move the group's offset backwards.
 */
function hasCommitGeneration(): boolean {
  const createConsumer = kafkajsModule<() => unknown>("consumer/index.js");
  const ConsumerGroup = kafkajsModule<{ prototype: { joinAndSync: () => unknown } }>(
    "consumer/consumerGroup.js",
  );
  return (
    createConsumer.toString().includes("const commitOffsetsOfGeneration") &&
    ConsumerGroup.prototype.joinAndSync.toString().includes("generationId: this.generationId")
  );
}

/**
 * Patch 007: the record decoder reads headers in one pass into an object without a prototype and
 * keeps a null value (length -1), and the producer's record encoder sends a null value. Decodes a
 * record built in memory with a null value, a repeated name and `__proto__`, encodes one with a
 * null value, and looks for the one-pass function in the decoder (2.2.4 copied the headers object
 * once per header: O(n²)).
 */
function hasRecordHeaders(): boolean {
  type Headers = Record<string, unknown>;
  const decodeRecord = kafkajsModule<
    ((d: unknown, c: object) => { headers: Headers }) & { decodeHeaders?: unknown }
  >("protocol/recordBatch/record/v0/decoder.js");
  const encodeRecord = kafkajsModule<(r: { key: null; value: null; headers: Headers }) => { buffer: Buffer }>(
    "protocol/recordBatch/record/v0/index.js",
  );
  const Decoder =
    kafkajsModule<new (b: Buffer) => { readVarInt(): number; readAll(): Buffer }>("protocol/decoder.js");
  const given = Object.create(null) as Headers;
  given.n = [null, Buffer.from("x")];
  given.__proto__ = Buffer.from("p");
  const encoded = new Decoder(encodeRecord({ key: null, value: null, headers: given }).buffer);
  encoded.readVarInt();
  const { headers } = decodeRecord(new Decoder(encoded.readAll()), { firstOffset: "0", firstTimestamp: "0" });
  const values = headers.n as unknown[];
  return (
    typeof decodeRecord.decodeHeaders === "function" &&
    Object.getPrototypeOf(headers) === null &&
    Object.hasOwn(headers, "__proto__") &&
    Array.isArray(values) &&
    values[0] === null
  );
}

/**
 * Patch 008: a connection closes itself when one of its requests times out (visible in the
 * connection's source), so the next request opens a new one. Without it a half-open connection to
 * the group coordinator is used until the consumer restarts: a member cut off from its coordinator
 * does not rejoin after the path heals.
 */
function hasRequestTimeoutClose(): boolean {
  const Connection = kafkajsModule<{
    prototype: { send: () => unknown; closeAfterRequestTimeout?: unknown };
  }>("network/connection.js");
  return (
    typeof Connection.prototype.closeAfterRequestTimeout === "function" &&
    Connection.prototype.send.toString().includes("this.closeAfterRequestTimeout(e)")
  );
}

/**
 * Patch 013: the broker pool asks brokers whose connections look unhealthy for metadata and group
 * coordinators after the others (visible in the pool's source). Without it a silent broker is asked
 * one time in N, and each time costs a request timeout.
 */
function hasBrokerHealth(): boolean {
  const BrokerPool = kafkajsModule<{
    prototype: { byHealth?: unknown; findConnectedBroker: () => unknown; withBroker: () => unknown };
  }>("cluster/brokerPool.js");
  const suspectSince = (path: string) =>
    typeof kafkajsModule<{ prototype: { suspectSince?: unknown } }>(path).prototype.suspectSince ===
    "function";
  return (
    typeof BrokerPool.prototype.byHealth === "function" &&
    ["network/connection.js", "network/connectionPool.js", "broker/index.js"].every(suspectSince) &&
    BrokerPool.prototype.findConnectedBroker.toString().includes("this.byHealth(") &&
    BrokerPool.prototype.withBroker.toString().includes("this.byHealth(")
  );
}

/**
 * Checks that the loaded KafkaJS behaves as patched, by running the patched functions on a
 * fetch response built in memory (no broker).
 * @throws ReplayableError KAFKA naming the missing patches and how to install them.
 */
export async function assertKafkajsPatched(): Promise<void> {
  const missing: string[] = [];
  let failure: unknown;
  try {
    if (!filtersInterleavedAbortedTransactions()) missing.push("001 aborted-transactions");
    if (!(await passesOverEmptiedBatch())) missing.push("002 compacted-empty-batch");
    if (!hasLanesAndGenerations()) missing.push("003 lanes-and-generations");
    if (!hasFetchLimits()) missing.push("005 fetch-limits");
    if (!hasCommitGeneration()) missing.push("006 commit-generation");
    if (!hasRecordHeaders()) missing.push("007 record-headers");
    if (!hasRequestTimeoutClose()) missing.push("008 request-timeout");
    if (!hasBrokerHealth()) missing.push("013 broker-health");
  } catch (error) {
    failure = error;
    missing.push("(the check itself failed: an unexpected KafkaJS version?)");
  }
  if (missing.length === 0) return;
  const path = require.resolve("kafkajs");
  throw new ReplayableError(
    "KAFKA",
    `the KafkaJS loaded from ${path} lacks replayable's patches ${missing.join(", ")}: it can deliver aborted records under read_committed, stop at a compacted batch, not follow the memory budget's fetch sizes, commit an offset with a later group generation's id, block for minutes on a record with many headers, keep using a connection whose request timed out, or wait a request timeout on a silent broker for metadata. Install replayable with npm or pnpm (they install the patched copy it bundles), or, in a checkout, run \`npm ci\` (its postinstall applies patches/ with patch-package); see patches/README.md`,
    { cause: failure, context: { kafkajs: path, missing } },
  );
}
