/**
 * The member loop without a broker or a database: a fake feed (records pauses, resumes and offset
 * commits, answers a commit of an older generation `skipped_rebalanced` as Kafka's coordinator
 * does) and a fake transaction runner (an in-memory checkpoint; each call can be held or failed).
 * The real KafkaJS feed and PostgreSQL transactions are covered by test/integration/engine/.
 */
import { describe, expect, it, vi } from "vitest";
import { notAscending } from "../../../src/engine/applyBatch.js";
import { GenerationEpoch, type EpochSession } from "../../../src/engine/generationEpoch.js";
import { Member } from "../../../src/engine/member.js";
import { MemberEvents, type MemberEventMap } from "../../../src/engine/memberEvents.js";
import {
  PartitionWorker,
  type TransactionRequest,
  type TransactionRunner,
} from "../../../src/engine/partitionWorker.js";
import { ReplayableError } from "../../../src/errors.js";
import type { CommitResult, Feed, FeedListener, FetchedBatch } from "../../../src/feed.js";
import { createLogger } from "../../../src/logger.js";
import type { KafkaRecord } from "../../../src/record.js";
import { partitionKey, type PartitionKey, type TopicPartition } from "../../../src/topicPartition.js";

const TOPIC = "t";

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A feed that records what the engine asks of it; the test plays Kafka through `listener`. */
class FakeFeed implements Feed {
  listener!: FeedListener;
  generation = 0;
  readonly calls: string[] = [];
  private readonly commits: Promise<CommitResult>[] = [];

  get isJoined(): boolean {
    return this.generation > 0;
  }

  start(listener: FeedListener): Promise<void> {
    this.listener = listener;
    return Promise.resolve();
  }

  /** A group join in a new generation with `partitions` of the topic. */
  join(partitions: number[]): number {
    this.generation += 1;
    this.listener.assigned(this.generation, { [TOPIC]: partitions });
    return this.generation;
  }

  pause(tp: TopicPartition): void {
    this.calls.push(`pause ${tp.partition}`);
  }

  resume(tp: TopicPartition): void {
    this.calls.push(`resume ${tp.partition}`);
  }

  commit(tp: TopicPartition, nextOffset: string, generation: number): Promise<CommitResult> {
    const result: CommitResult = generation === this.generation ? "committed" : "skipped_rebalanced";
    this.calls.push(`commit ${tp.partition}@${nextOffset} ${result}`);
    const answer = Promise.resolve(result);
    this.commits.push(answer);
    return answer;
  }

  rejoin(generation: number): void {
    this.calls.push(`rejoin ${generation}`);
  }

  async stop(drain: () => Promise<void>): Promise<void> {
    await drain();
    await Promise.all(this.commits);
  }

  /** The offset commits asked for, in order. */
  committed(): string[] {
    return this.calls.filter((c) => c.startsWith("commit "));
  }
}

/** One step the fake database takes for a call: go on, wait for a gate, or fail. */
type Step = Deferred | Error | "ok";

/** Transactions against an in-memory checkpoint per partition; records applied are listed in order. */
class FakeDatabase {
  readonly requests: TransactionRequest[] = [];
  readonly applied: string[] = [];
  readonly checkpoints = new Map<number, bigint>();
  /** The projection's rebuild epoch: the id of its latest rebuild. */
  epoch = "0";
  /** Epochs read by the member, in order. */
  readonly epochReads: string[] = [];
  private readonly steps: Step[] = [];

  /** A rebuild: a newer epoch, no checkpoints. */
  rebuild(): void {
    this.epoch = String(BigInt(this.epoch) + 1n);
    this.checkpoints.clear();
  }

  /** The checkpoints as the epoch read's statement returns them. */
  checkpointsRead(): ReadonlyMap<PartitionKey, string> {
    return new Map([...this.checkpoints].map(([p, next]) => [partitionKey(TOPIC, p), next.toString()]));
  }

  readonly readRebuildEpoch = (): Promise<string> => {
    this.epochReads.push(this.epoch);
    return Promise.resolve(this.epoch);
  };

  /** The next calls' behaviour, in order; calls past these succeed at once. */
  next(...steps: Step[]): this {
    this.steps.push(...steps);
    return this;
  }

  readonly run: TransactionRunner = async (request) => {
    this.requests.push(request);
    const step = this.steps.shift() ?? "ok";
    if (step instanceof Error) throw step;
    if (step !== "ok") await step.promise;
    // The real apply step's refusal, before BEGIN.
    const refused = notAscending(request, request.throughOffset);
    if (refused !== undefined) throw refused;
    if (BigInt(this.epoch) > BigInt(request.rebuildEpoch ?? "0"))
      throw new ReplayableError("PROJECTION_REBUILT", `rebuilt since epoch ${request.rebuildEpoch}`);
    const checkpoint = this.checkpoints.get(request.partition) ?? 0n;
    const fresh = request.records.filter((r) => BigInt(r.offset) >= checkpoint);
    this.applied.push(...fresh.map((r) => `${r.partition}:${r.offset}`));
    const next = BigInt(request.throughOffset) + 1n;
    const after = next > checkpoint ? next : checkpoint;
    this.checkpoints.set(request.partition, after);
    const result = {
      nextOffset: next.toString(),
      checkpoint: after.toString(),
      applied: fresh.length,
      duplicates: { offset: request.records.length - fresh.length, event_id: 0 },
      deadLettered: [],
      eventIdsRecorded: 0,
    };
    return { result, durationMs: 1 };
  };
}

/** Records `from`..`to` of partition `partition`, fetched in `generation`. */
function batch(generation: number, from: number, to: number, partition = 0): FetchedBatch {
  const records: KafkaRecord[] = [];
  for (let o = from; o <= to; o++)
    records.push({
      topic: TOPIC,
      partition,
      offset: String(o),
      timestamp: "0",
      key: null,
      value: Buffer.from("{}"),
      headers: {},
    });
  return {
    topic: TOPIC,
    partition,
    generation,
    highWatermark: "1000",
    firstOffset: String(from),
    lastOffset: String(to),
    throughOffset: String(to),
    size: records.length,
    records,
  };
}

function offsets(from: number, to: number, partition = 0): string[] {
  return Array.from({ length: to - from + 1 }, (_, i) => `${partition}:${from + i}`);
}

interface Setup {
  prefetch?: boolean;
  maxRecords?: number;
  /** The member's transaction slots; default: every transaction gets one at once. */
  slots?: <T>(run: () => Promise<T>) => Promise<T>;
  retryInitialMs?: number;
  currentHighWatermark?: () => Promise<string | undefined>;
  readRebuildEpoch?: () => Promise<string>;
  /**
   * The session's epoch reads also return the fake database's checkpoints, as the real one does
   * (generationEpoch.ts); off by default, so a generation's first batch asks the database.
   */
  primeCheckpoints?: boolean;
}

async function setup(options: Setup = {}) {
  const feed = new FakeFeed();
  const db = new FakeDatabase();
  const log = createLogger("silent");
  const events = new MemberEvents(log);
  const seen: string[] = [];
  const committed: MemberEventMap["batchCommitted"][] = [];
  events
    .on("batchCommitted", (e) => {
      committed.push(e);
      seen.push(`batchCommitted ${e.lastOffset}${e.fastPath ? " fastPath" : ""}`);
    })
    .on("retried", (e) => seen.push(`retried ${e.attempt} from ${e.fromOffset}`))
    .on("paused", () => seen.push("paused"))
    .on("resumed", () => seen.push("resumed"))
    .on("fatal", (e) => seen.push(`fatal ${e.error.message}`));
  const member = new Member({
    feed,
    events,
    log,
    epochSession: heldSession(
      options.readRebuildEpoch ?? db.readRebuildEpoch,
      options.primeCheckpoints === true ? () => db.checkpointsRead() : undefined,
    ),
    workers: {
      runTransaction: db.run,
      slots: options.slots ?? ((run) => run()),
      limits: () => ({ maxRecords: options.maxRecords ?? 100, maxBytes: 1_000_000 }),
      timing: { initialMs: options.retryInitialMs ?? 1, maxMs: options.retryInitialMs ?? 2 },
      prefetch: options.prefetch ?? false,
      currentHighWatermark: options.currentHighWatermark ?? (() => Promise.resolve(undefined)),
    },
  });
  await member.start();
  return { feed, db, member, seen, committed };
}

/**
 * A lock session held throughout, whose epoch reads `read` answers, with the checkpoints
 * `checkpoints` gives read in the same statement (test/unit/engine/rebuildEpochSession.test.ts loses it).
 */
function heldSession(
  read: () => Promise<string>,
  checkpoints?: () => ReadonlyMap<PartitionKey, string>,
): EpochSession {
  return {
    heldSession: () => 1,
    // The checkpoints as they were when the read was sent (a gated read returns them stale).
    readRebuildEpoch: async () => {
      const known = checkpoints?.();
      return { kind: "read", epoch: await read(), checkpoints: known };
    },
    whenHeld: () => Promise.resolve(true),
  };
}

/** A PostgreSQL serialization failure (SQLSTATE 40001): transient. */
function serializationFailure(): Error {
  return Object.assign(new Error("could not serialize access"), { code: "40001" });
}

describe("PartitionWorker (through Member, with a fake feed and database)", () => {
  it("applies one batch at a time in offset order and holds at most one prefetched batch, the partition paused while it holds two", async () => {
    const { feed, db } = await setup({ prefetch: true });
    const gate = deferred();
    db.next(gate);
    const g = feed.join([0]);
    feed.listener.fetched(batch(g, 0, 9));
    await vi.waitFor(() => expect(db.requests).toHaveLength(1));
    feed.listener.fetched(batch(g, 10, 19));
    expect(feed.calls).toEqual(["pause 0"]);
    gate.resolve();
    await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
    expect(feed.calls).toEqual(["pause 0", "commit 0@10 committed", "resume 0", "commit 0@20 committed"]);
    expect(db.applied).toEqual(offsets(0, 19));
  });

  it("without prefetch pauses the partition while its batch is applied and resumes it after", async () => {
    const { feed, db } = await setup();
    const gate = deferred();
    db.next(gate);
    const g = feed.join([0, 1]);
    feed.listener.fetched(batch(g, 0, 4, 0));
    feed.listener.fetched(batch(g, 0, 4, 1));
    expect(feed.calls).toEqual(["pause 0", "pause 1"]);
    // Partition 1 does not wait for partition 0's held transaction.
    await vi.waitFor(() => expect(feed.calls).toContain("resume 1"));
    expect(feed.calls).not.toContain("resume 0");
    gate.resolve();
    await vi.waitFor(() => expect(feed.calls).toContain("resume 0"));
    expect(feed.committed().sort()).toEqual(["commit 0@5 committed", "commit 1@5 committed"]);
  });

  it("drops a batch fetched in an older generation and the batches waiting from before a rebalance; the running transaction finishes, its offset commit skipped", async () => {
    const { feed, db } = await setup({ prefetch: true });
    const gate = deferred();
    db.next(gate);
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(db.requests).toHaveLength(1));
    feed.listener.fetched(batch(first, 10, 19));
    const second = feed.join([0]);
    feed.listener.fetched(batch(first, 20, 29)); // in flight across the join
    // The waiting batch went with the join (the lane is no longer full); the late one was never held.
    expect(feed.calls).toEqual(["pause 0", "resume 0"]);
    gate.resolve();
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 skipped_rebalanced"]));
    expect(db.requests).toHaveLength(1);
    // The new generation fetches again from the committed offset (none: 0); both batches arrived
    // before the first transaction got its slot, so one transaction applies them.
    feed.listener.fetched(batch(second, 0, 9));
    feed.listener.fetched(batch(second, 10, 19));
    await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
    expect(feed.committed().slice(1)).toEqual(["commit 0@20 committed"]);
    expect(db.applied).toEqual(offsets(0, 19));
  });

  it("a batch left unfinished by a rebalance during its back-off is fetched again from the committed offset and applied once", async () => {
    const { feed, db, seen } = await setup({ maxRecords: 5, retryInitialMs: 60_000 });
    db.next("ok", serializationFailure());
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(seen).toContain("retried 1 from 5"));
    expect(feed.committed()).toEqual(["commit 0@5 committed"]);
    feed.join([]); // the partition goes to another member: the back-off ends at once
    await vi.waitFor(() => expect(feed.calls.at(-1)).toBe("resume 0"));
    const third = feed.join([0]);
    feed.listener.fetched(batch(third, 5, 9));
    await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
    expect(feed.committed()[1]).toBe("commit 0@10 committed");
    expect(db.applied).toEqual(offsets(0, 9));
  });

  it("retries a failed transaction in place, counts the partition paused from the third failure in a row, and resumes when the back-off ends", async () => {
    const { feed, db, seen } = await setup();
    db.next(serializationFailure(), serializationFailure(), serializationFailure(), serializationFailure());
    const g = feed.join([0]);
    feed.listener.fetched(batch(g, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(seen).toEqual([
      "retried 1 from 0",
      "retried 2 from 0",
      "retried 3 from 0",
      "paused",
      "resumed",
      "retried 4 from 0",
      "paused",
      "resumed",
      "batchCommitted 9",
    ]);
    expect(db.requests).toHaveLength(5);
    expect(db.applied).toEqual(offsets(0, 9));
  });

  it("a graceful stop lets the running transaction finish and commit its offset, and drops the batch waiting behind it", async () => {
    const { feed, db, member } = await setup({ prefetch: true });
    const gate = deferred();
    db.next(gate);
    const g = feed.join([0]);
    feed.listener.fetched(batch(g, 0, 9));
    await vi.waitFor(() => expect(db.requests).toHaveLength(1));
    feed.listener.fetched(batch(g, 10, 19));
    let stopped = false;
    const stopping = member.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(feed.committed()).toEqual(["commit 0@10 committed"]);
    expect(db.requests).toHaveLength(1);
  });

  it("stops on an error no retry can fix: no offset commit, a fatal event, later batches dropped", async () => {
    const { feed, db, seen } = await setup();
    db.next(new ReplayableError("CONFIG_INVALID", "the projection's table is missing"));
    const g = feed.join([0]);
    feed.listener.fetched(batch(g, 0, 9));
    await vi.waitFor(() => expect(seen).toEqual(["fatal the projection's table is missing"]));
    feed.listener.fetched(batch(g, 10, 19));
    await Promise.resolve();
    expect(db.requests).toHaveLength(1);
    expect(feed.committed()).toEqual([]);
  });

  it("skips a generation's first batch below the checkpoint its epoch read found, without asking the database", async () => {
    const { feed, db, seen } = await setup({ primeCheckpoints: true });
    const gate = deferred();
    const read = db.readRebuildEpoch;
    vi.spyOn(db, "readRebuildEpoch").mockImplementationOnce(async () => {
      await gate.promise;
      return read();
    });
    db.checkpoints.set(0, 100n); // a replay: the projection already applied up to 99
    const g = feed.join([0]);
    // Fetched (and decoded) before the read answers: the worker waits for it, as a transaction would.
    expect(feed.listener.decodeFloor!({ topic: TOPIC, partition: 0 })).toBeUndefined();
    feed.listener.fetched(batch(g, 0, 9));
    gate.resolve();
    await vi.waitFor(() => expect(seen).toEqual(["batchCommitted 9 fastPath"]));
    // Later fetches of the generation are passed over undecoded below it.
    expect(feed.listener.decodeFloor!({ topic: TOPIC, partition: 0 })).toBe("100");
    // A batch that reaches the checkpoint goes to the database.
    feed.listener.fetched(batch(g, 90, 109));
    await vi.waitFor(() => expect(seen).toEqual(["batchCommitted 9 fastPath", "batchCommitted 109"]));
    expect(db.requests.map((r) => r.throughOffset)).toEqual(["109"]);
    expect(db.applied).toEqual(offsets(100, 109));
  });

  it("waits for the generation's epoch read before judging a batch fetched meanwhile, and keeps no checkpoint read for an earlier assignment", async () => {
    const { feed, db, seen } = await setup({ primeCheckpoints: true });
    const gate = deferred();
    let reads = 0;
    const read = db.readRebuildEpoch;
    vi.spyOn(db, "readRebuildEpoch").mockImplementation(async () => {
      reads += 1;
      if (reads === 1) await gate.promise;
      return read();
    });
    db.checkpoints.set(0, 100n);
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await Promise.resolve();
    expect(db.requests).toEqual([]);
    // The partition is assigned again before the first read answers; the rebuild between the two
    // reads moved the checkpoint back: the first read's 100 must not be cached for the second.
    db.rebuild();
    const second = feed.join([0]);
    gate.resolve();
    feed.listener.fetched(batch(second, 0, 9));
    await vi.waitFor(() => expect(seen).toEqual(["batchCommitted 9"]));
    expect(db.applied).toEqual(offsets(0, 9));
    expect(feed.committed()).toEqual(["commit 0@10 committed"]);
  });

  it("skips a batch below the cached checkpoint without asking the database, and asks again after a rebalance", async () => {
    const { feed, db, seen } = await setup();
    db.checkpoints.set(0, 100n); // a replay: the projection already applied up to 99
    const g = feed.join([0]);
    feed.listener.fetched(batch(g, 0, 9));
    await vi.waitFor(() => expect(seen).toEqual(["batchCommitted 9"]));
    feed.listener.fetched(batch(g, 10, 19));
    await vi.waitFor(() => expect(seen).toEqual(["batchCommitted 9", "batchCommitted 19 fastPath"]));
    expect(db.requests).toHaveLength(1);
    const next = feed.join([0]);
    feed.listener.fetched(batch(next, 20, 29));
    await vi.waitFor(() => expect(seen).toHaveLength(3));
    expect(seen[2]).toBe("batchCommitted 29");
    expect(db.requests).toHaveLength(2);
    expect(feed.committed()).toEqual([
      "commit 0@10 committed",
      "commit 0@20 committed",
      "commit 0@30 committed",
    ]);
  });

  it("asks Kafka for the high watermark once before calling the checkpoint ahead of the log", async () => {
    const ahead = () =>
      new ReplayableError("CHECKPOINT_AHEAD_OF_LOG", "checkpoint 500 is above the high watermark");
    const asked = vi.fn(() => Promise.resolve("2000"));
    const { feed, db, seen } = await setup({ currentHighWatermark: asked });
    db.next(ahead());
    const g = feed.join([0]);
    feed.listener.fetched(batch(g, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(db.requests.map((r) => r.highWatermark)).toEqual(["1000", "2000"]);
    // A second time in the same batch it is the truth: the member stops.
    db.next(ahead(), ahead());
    feed.listener.fetched(batch(g, 10, 19));
    await vi.waitFor(() => expect(seen.at(-1)).toMatch(/^fatal checkpoint 500/));
    expect(asked).toHaveBeenCalledTimes(2);
    expect(feed.committed()).toHaveLength(1);
  });

  it("reads the rebuild epoch at each assignment; the generation's transactions wait for it and carry it", async () => {
    const gate = deferred();
    const read = vi.fn(async () => {
      await gate.promise;
      return "7";
    });
    const { feed, db } = await setup({ readRebuildEpoch: read });
    const g = feed.join([0]);
    expect(read).toHaveBeenCalledTimes(1);
    feed.listener.fetched(batch(g, 0, 9));
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.requests).toHaveLength(0);
    gate.resolve();
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(db.requests.map((r) => r.rebuildEpoch)).toEqual(["7"]);
    feed.join([0]);
    expect(read).toHaveBeenCalledTimes(2);
  });

  it("a batch refused as fetched before a rebuild drops its generation's batches, commits nothing, and the next generation applies from the reset offsets", async () => {
    const { feed, db, seen } = await setup({ prefetch: true });
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    // Frozen past the session timeout; a rebuild empties the projection and resets the offsets to 0.
    db.rebuild();
    // Resumed, the dead generation's fetcher still delivers from its position.
    const gate = deferred();
    db.next(gate);
    feed.listener.fetched(batch(first, 10, 19));
    feed.listener.fetched(batch(first, 20, 29));
    await vi.waitFor(() => expect(db.requests).toHaveLength(2));
    gate.resolve();
    // The member asks to rejoin: nothing else would start a rebalance (rebuildEpochSession.test.ts).
    await vi.waitFor(() => expect(feed.calls.filter((c) => !c.startsWith("rejoin")).at(-1)).toBe("resume 0"));
    expect(feed.calls.filter((c) => c.startsWith("rejoin"))).toEqual([`rejoin ${first}`]);
    feed.listener.fetched(batch(first, 30, 39));
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.requests).toHaveLength(2);
    expect(feed.committed()).toEqual(["commit 0@10 committed"]);
    expect(seen.filter((e) => !e.startsWith("batchCommitted"))).toEqual([]);

    const second = feed.join([0]);
    feed.listener.fetched(batch(second, 0, 9));
    feed.listener.fetched(batch(second, 10, 19));
    await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
    expect(feed.committed().slice(1)).toEqual(["commit 0@20 committed"]);
    expect(db.applied).toEqual([...offsets(0, 9), ...offsets(0, 19)]);
    expect(db.requests.map((r) => r.rebuildEpoch)).toEqual(["0", "0", "1"]);
    expect(db.epochReads).toEqual(["0", "1"]);
  });

  it("counts the failures of a new generation's batch from one, not on from an abandoned batch's", async () => {
    const { feed, db, seen } = await setup({ retryInitialMs: 60_000 });
    db.next(serializationFailure());
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(seen).toContain("retried 1 from 0"));
    const second = feed.join([0]); // ends the back-off at once: the batch is abandoned
    await vi.waitFor(() => expect(feed.calls.at(-1)).toBe("resume 0"));
    db.next(serializationFailure());
    feed.listener.fetched(batch(second, 0, 9));
    await vi.waitFor(() => expect(seen.filter((e) => e.startsWith("retried"))).toHaveLength(2));
    expect(seen.filter((e) => e.startsWith("retried"))).toEqual(["retried 1 from 0", "retried 1 from 0"]);
  });

  describe("a transaction that gets its slot takes the batches waiting behind it", () => {
    /** One slot, closed until `open` resolves: the test decides when the first transaction starts. */
    function closedSlot() {
      const open = deferred();
      let asked = 0;
      const slots = async <T>(run: () => Promise<T>): Promise<T> => {
        asked += 1;
        await open.promise;
        return run();
      };
      /** Transactions that asked for the slot so far. */
      const waiting = () => asked;
      return { open, slots, waiting };
    }

    it("applies them in one transaction through the last one's offsets, with one offset commit", async () => {
      const { open, slots } = closedSlot();
      const { feed, db, committed } = await setup({ prefetch: true, slots });
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 0, 9));
      feed.listener.fetched(batch(g, 10, 19));
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@20 committed"]));
      expect(db.requests).toHaveLength(1);
      expect(db.requests[0]!.throughOffset).toBe("19");
      expect(db.requests[0]!.records.map((r) => r.offset)).toEqual(offsets(0, 19).map((o) => o.slice(2)));
      expect(committed.map((e) => [e.firstOffset, e.lastOffset, e.records])).toEqual([["0", "19", 20]]);
      // The absorbed batch counted in the lane until its transaction settled.
      expect(feed.calls).toEqual(["pause 0", "commit 0@20 committed", "resume 0"]);
    });

    it("takes none that would pass the transaction's records", async () => {
      const { open, slots } = closedSlot();
      const { feed, db } = await setup({ prefetch: true, slots, maxRecords: 15 });
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 0, 9));
      feed.listener.fetched(batch(g, 10, 19));
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
      expect(db.requests.map((r) => r.throughOffset)).toEqual(["9", "19"]);
      expect(db.applied).toEqual(offsets(0, 19));
    });

    it("puts them back when the transaction fails; the retry takes them again and applies each record once", async () => {
      const { open, slots } = closedSlot();
      const { feed, db, seen } = await setup({ prefetch: true, slots });
      db.next(serializationFailure());
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 0, 9));
      feed.listener.fetched(batch(g, 10, 19));
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@20 committed"]));
      expect(db.requests.map((r) => [r.records.length, r.throughOffset])).toEqual([
        [20, "19"],
        [20, "19"],
      ]);
      expect(seen).toEqual(["retried 1 from 0", "batchCommitted 19"]);
      expect(db.applied).toEqual(offsets(0, 19));
    });

    it("never takes a batch of a later generation into a transaction of an earlier one (a rebalance that kept the partition)", async () => {
      const { open, slots, waiting } = closedSlot();
      const { feed, db } = await setup({ prefetch: true, slots });
      const first = feed.join([0]);
      feed.listener.fetched(batch(first, 0, 9)); // waits for the slot across the rebalance
      await vi.waitFor(() => expect(waiting()).toBe(1));
      const second = feed.join([0]);
      feed.listener.fetched(batch(second, 0, 9)); // fetched again from the committed offset
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toContain("commit 0@10 committed"));
      expect(db.requests.map((r) => r.records.length)).toEqual([10, 10]);
      expect(db.applied).toEqual(offsets(0, 9));
      expect(feed.committed()).toEqual(["commit 0@10 skipped_rebalanced", "commit 0@10 committed"]);
    });

    it("loses no batch of a later generation when a transaction of an earlier one fails", async () => {
      const { open, slots } = closedSlot();
      const { feed, db } = await setup({ prefetch: true, slots });
      db.next(serializationFailure());
      const first = feed.join([0]);
      feed.listener.fetched(batch(first, 0, 9));
      await vi.waitFor(() => expect(db.epochReads).toHaveLength(1));
      const second = feed.join([0]);
      feed.listener.fetched(batch(second, 0, 9));
      feed.listener.fetched(batch(second, 10, 19));
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toContain("commit 0@20 committed"));
      expect(db.applied).toEqual(offsets(0, 19));
    });

    it("checks the checkpoint against the high watermark Kafka gave on a recheck, not an absorbed batch's older one", async () => {
      const { open, slots } = closedSlot();
      const asked = vi.fn(() => Promise.resolve("2000"));
      const { feed, db } = await setup({ prefetch: true, slots, currentHighWatermark: asked });
      db.next(new ReplayableError("CHECKPOINT_AHEAD_OF_LOG", "checkpoint 1500 is above the high watermark"));
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 0, 9));
      feed.listener.fetched(batch(g, 10, 19));
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@20 committed"]));
      expect(db.requests.map((r) => [r.throughOffset, r.highWatermark])).toEqual([
        ["19", "1000"],
        ["19", "2000"],
      ]);
    });
  });

  describe("overlapping batches of one generation (KafkaJS re-fetched offsets: a leader change, an out-of-range reset)", () => {
    /** One slot, closed until `open` resolves: both batches wait for it. */
    function closedSlot() {
      const open = deferred();
      const slots = async <T>(run: () => Promise<T>): Promise<T> => {
        await open.promise;
        return run();
      };
      return { open, slots };
    }

    it("never absorbs a batch that repeats offsets of the transaction: each record is applied once", async () => {
      const { open, slots } = closedSlot();
      const { feed, db, committed } = await setup({ prefetch: true, slots });
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 0, 9));
      feed.listener.fetched(batch(g, 5, 14)); // the same generation, fetched again from offset 5
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toContain("commit 0@15 committed"));
      expect(db.applied).toEqual(offsets(0, 14));
      expect(db.requests.map((r) => r.throughOffset)).toEqual(["9", "14"]);
      expect(committed.map((e) => [e.result.applied, e.result.duplicates.offset])).toEqual([
        [10, 0],
        [5, 5],
      ]);
      expect(feed.committed()).toEqual(["commit 0@10 committed", "commit 0@15 committed"]);
    });

    it("never absorbs a batch that goes back to an earlier offset (an out-of-range reset to the log start)", async () => {
      const { open, slots } = closedSlot();
      const { feed, db, committed } = await setup({ prefetch: true, slots });
      db.checkpoints.set(0, 10n); // 0..9 applied by the partition's previous owner
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 10, 19));
      feed.listener.fetched(batch(g, 0, 4)); // the log start again, without a rejoin
      open.resolve();
      await vi.waitFor(() => expect(feed.committed()).toContain("commit 0@5 committed"));
      expect(db.applied).toEqual(offsets(10, 19));
      expect(db.checkpoints.get(0)).toBe(20n);
      expect(committed.map((e) => [e.result.applied, e.result.duplicates.offset])).toEqual([
        [10, 0],
        [0, 5],
      ]);
    });

    it("counts a batch delivered twice in one generation, not absorbed, as duplicates and applies it once", async () => {
      const { feed, db, committed } = await setup();
      const g = feed.join([0]);
      feed.listener.fetched(batch(g, 0, 9));
      await vi.waitFor(() => expect(committed).toHaveLength(1));
      feed.listener.fetched(batch(g, 0, 9)); // the same offsets again: below the cached checkpoint
      await vi.waitFor(() => expect(committed).toHaveLength(2));
      feed.listener.fetched(batch(g, 5, 14)); // overlapping: the database's checkpoint filters it
      await vi.waitFor(() => expect(committed).toHaveLength(3));
      expect(db.applied).toEqual(offsets(0, 14));
      expect(committed.map((e) => [e.result.applied, e.result.duplicates.offset, e.fastPath])).toEqual([
        [10, 0, false],
        [0, 10, true],
        [5, 5, false],
      ]);
      expect(db.requests).toHaveLength(2);
    });

    it("stops the member, without a retry or an offset commit, when one fetched batch is itself not ascending", async () => {
      const { feed, db, seen } = await setup({ retryInitialMs: 1 });
      const g = feed.join([0]);
      const twice = batch(g, 0, 9);
      const records = [...twice.records, ...batch(g, 5, 9).records];
      feed.listener.fetched({ ...twice, records, size: records.length });
      await vi.waitFor(() => expect(seen).toHaveLength(1));
      expect(seen[0]).toMatch(
        /^fatal the records of t\/0 are not in ascending offset order: offset 5 follows 9/,
      );
      await new Promise((resolve) => setTimeout(resolve, 20)); // twenty back-offs' worth
      expect(db.requests).toHaveLength(1);
      expect(db.applied).toEqual([]);
      expect(feed.committed()).toEqual([]);
    });
  });
});

describe("PartitionWorker: a revoked partition's failed transaction (driven directly, to see its state)", () => {
  /** A worker of partition 0 in generation 1, with a fake feed and database; the back-off is `retryMs`. */
  function standalone(retryMs: number) {
    const feed = new FakeFeed();
    feed.generation = 1;
    const db = new FakeDatabase();
    const log = createLogger("silent");
    const events = new MemberEvents(log);
    const seen: string[] = [];
    events
      .on("batchCommitted", (e) => seen.push(`batchCommitted ${e.lastOffset}`))
      .on("retried", (e) => seen.push(`retried ${e.attempt} from ${e.fromOffset}`));
    const epoch = (generation = 1) =>
      new GenerationEpoch({
        generation,
        session: heldSession(db.readRebuildEpoch),
        onUnproven: () => undefined,
      });
    const worker = new PartitionWorker({
      topic: TOPIC,
      partition: 0,
      generation: 1,
      rebuildEpoch: epoch(),
      feed,
      events,
      runTransaction: db.run,
      slots: (run) => run(),
      limits: () => ({ maxRecords: 100, maxBytes: 1_000_000 }),
      timing: { initialMs: retryMs, maxMs: retryMs },
      prefetch: false,
      memberSignal: new AbortController().signal,
      currentHighWatermark: () => Promise.resolve(undefined),
      rejoin: () => undefined,
      log,
      random: () => 0.999,
    });
    return { feed, db, seen, worker, epoch };
  }

  it("stays revoked when revoked during the back-off, and runs no retry", async () => {
    const { db, seen, worker } = standalone(60_000);
    db.next(serializationFailure());
    worker.offer(batch(1, 0, 9));
    await vi.waitFor(() => expect(seen).toEqual(["retried 1 from 0"]));
    expect(worker.state).toBe("backingOff");
    worker.revoke();
    expect(worker.state).toBe("revoked");
    await worker.drained(); // the back-off ends at once
    expect(worker.state).toBe("revoked");
    expect(db.requests).toHaveLength(1);
  });

  it("stays revoked when the transaction running at the revoke fails, and neither backs off nor retries", async () => {
    const { db, seen, worker } = standalone(5);
    const gate = deferred();
    db.next(gate);
    worker.offer(batch(1, 0, 9));
    await vi.waitFor(() => expect(db.requests).toHaveLength(1));
    worker.revoke();
    gate.reject(serializationFailure());
    await worker.drained(); // a back-off and a retry would run before this resolves
    expect(worker.state).toBe("revoked");
    expect(db.requests).toHaveLength(1);
    expect(db.applied).toEqual([]);
    expect(seen).toEqual([]);
  });

  it("does not retry the old generation's batch, nor hold up the new generation's, when it fails after a revoke and a new assignment", async () => {
    const { feed, db, worker, epoch } = standalone(60_000);
    const gate = deferred();
    db.next(gate);
    worker.offer(batch(1, 0, 9));
    await vi.waitFor(() => expect(db.requests).toHaveLength(1));
    worker.revoke();
    feed.generation = 2;
    worker.assign(2, epoch(2));
    gate.reject(serializationFailure()); // the old generation's transaction fails after the assignment
    worker.offer(batch(2, 0, 9)); // fetched again from the committed offset
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(db.requests.map((r) => r.records.length)).toEqual([10, 10]);
    expect(db.applied).toEqual(offsets(0, 9));
    await worker.drained();
    expect(worker.state).toBe("idle");
  });

  it("does not retry the old generation's batch when the back-off it started before the revoke is still running at the new assignment", async () => {
    const { feed, db, seen, worker, epoch } = standalone(60_000);
    db.next(serializationFailure());
    worker.offer(batch(1, 0, 9));
    await vi.waitFor(() => expect(seen).toEqual(["retried 1 from 0"]));
    worker.revoke();
    feed.generation = 2;
    worker.assign(2, epoch(2)); // before the back-off has seen the revoke
    worker.offer(batch(2, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(db.requests).toHaveLength(2);
    expect(db.applied).toEqual(offsets(0, 9));
    expect(seen).toEqual(["retried 1 from 0", "batchCommitted 9"]);
  });
});
