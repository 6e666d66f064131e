/**
 * Regression (issue 25, item 1 "Loss: the rebuild epoch can be read late"): a generation's rebuild
 * epoch must be the one in force when the generation's fetch positions were read. It was read on the
 * main pool and a failed read was retried: a rebuild that ran before the retry handed the generation
 * the *new* epoch, and a batch its fetcher held from before the rebuild passed the fence, moved the
 * checkpoint past the records the rebuild reset, and those records later counted as duplicates.
 * The epoch is now read on the session holding the projection's shared advisory lock (which a
 * rebuild's exclusive lock excludes) and trusted only when that session was held from the join
 * through the read; otherwise the generation's batches are dropped and the member rejoins the group.
 *
 * A fake feed, a fake database (in-memory checkpoint and epoch) and a fake lock session whose losses
 * and retakes the test decides; the real session is tested in test/integration/engine/.
 */
import { describe, expect, it, vi } from "vitest";
import type { EpochSession, SessionEpochRead } from "../../../src/engine/generationEpoch.js";
import { Member } from "../../../src/engine/member.js";
import { MemberEvents } from "../../../src/engine/memberEvents.js";
import type { TransactionRequest, TransactionRunner } from "../../../src/engine/partitionWorker.js";
import { ReplayableError } from "../../../src/errors.js";
import type { CommitResult, Feed, FeedListener, FetchedBatch } from "../../../src/feed.js";
import { createLogger } from "../../../src/logger.js";
import type { KafkaRecord } from "../../../src/record.js";
import type { TopicPartition } from "../../../src/topicPartition.js";

const TOPIC = "t";

/** A feed that records what the engine asks of it (pauses, commits, rejoins); the test plays Kafka. */
class FakeFeed implements Feed {
  listener!: FeedListener;
  generation = 0;
  readonly calls: string[] = [];

  get isJoined(): boolean {
    return this.generation > 0;
  }

  start(listener: FeedListener): Promise<void> {
    this.listener = listener;
    return Promise.resolve();
  }

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
    return Promise.resolve(result);
  }

  rejoin(generation: number): void {
    this.calls.push(`rejoin ${generation}`);
  }

  async stop(drain: () => Promise<void>): Promise<void> {
    await drain();
  }

  committed(): string[] {
    return this.calls.filter((c) => c.startsWith("commit "));
  }

  rejoins(): string[] {
    return this.calls.filter((c) => c.startsWith("rejoin "));
  }
}

/** Transactions against an in-memory checkpoint and rebuild epoch. */
class FakeDatabase {
  readonly requests: TransactionRequest[] = [];
  readonly applied: string[] = [];
  readonly checkpoints = new Map<number, bigint>();
  epoch = "0";

  /** A rebuild: a newer epoch, no checkpoints (the committed offsets go back to 0 too). */
  rebuild(): void {
    this.epoch = String(BigInt(this.epoch) + 1n);
    this.checkpoints.clear();
  }

  readonly run: TransactionRunner = (request) => {
    this.requests.push(request);
    if (BigInt(this.epoch) > BigInt(request.rebuildEpoch))
      return Promise.reject(
        new ReplayableError("PROJECTION_REBUILT", `rebuilt since epoch ${request.rebuildEpoch}`),
      );
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
    return Promise.resolve({ result, durationMs: 1 });
  };
}

/** What the next epoch read does: answer, fail, or wait for the test. */
type ReadStep = "ok" | Error | Promise<void>;

/**
 * The session holding the projection's shared advisory lock: each session taken has a new serial.
 * While it is held no rebuild can run (the test keeps to that: it rebuilds only after `lose()`).
 */
class FakeLockSession implements EpochSession {
  serial = 1;
  held = true;
  readonly reads: string[] = [];
  private readonly steps: ReadStep[] = [];
  private waiters: (() => void)[] = [];

  constructor(private readonly db: FakeDatabase) {}

  /** The next reads' behaviour, in order; reads past these answer at once. */
  next(...steps: ReadStep[]): this {
    this.steps.push(...steps);
    return this;
  }

  lose(): void {
    this.held = false;
  }

  retake(): void {
    this.serial += 1;
    this.held = true;
    for (const wake of this.waiters.splice(0)) wake();
  }

  heldSession(): number | undefined {
    return this.held ? this.serial : undefined;
  }

  async readRebuildEpoch(serial: number): Promise<SessionEpochRead> {
    await this.step();
    // A query answered on a session proves it was held until then; a session lost or taken again
    // since `serial` proves nothing.
    if (!this.held || this.serial !== serial) {
      this.reads.push(`lost ${serial}`);
      return { kind: "lost" };
    }
    this.reads.push(this.db.epoch);
    return { kind: "read", epoch: this.db.epoch };
  }

  whenHeld(signal: AbortSignal): Promise<boolean> {
    if (this.held) return Promise.resolve(true);
    return new Promise((resolve) => {
      this.waiters.push(() => resolve(true));
      signal.addEventListener("abort", () => resolve(false), { once: true });
    });
  }

  private async step(): Promise<void> {
    const step = this.steps.shift() ?? "ok";
    if (step instanceof Error) {
      // The query's connection died: the session with it.
      this.lose();
      throw step;
    }
    if (step !== "ok") await step;
  }
}

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

/** A lost connection (SQLSTATE class 08): transient. */
function connectionLost(): Error {
  return Object.assign(new Error("Connection terminated unexpectedly"), { code: "08006" });
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

async function setup() {
  const feed = new FakeFeed();
  const db = new FakeDatabase();
  const session = new FakeLockSession(db);
  const log = createLogger("silent");
  const events = new MemberEvents(log);
  const seen: string[] = [];
  events
    .on("retried", (e) => seen.push(`retried ${e.attempt} from ${e.fromOffset}`))
    .on("fatal", (e) => seen.push(`fatal ${e.error.message}`));
  const member = new Member({
    feed,
    events,
    log,
    epochSession: session,
    workers: {
      runTransaction: db.run,
      slots: (run) => run(),
      limits: () => ({ maxRecords: 100, maxBytes: 1_000_000 }),
      timing: { initialMs: 1, maxMs: 2 },
      prefetch: false,
      currentHighWatermark: () => Promise.resolve(undefined),
    },
  });
  await member.start();
  return { feed, db, session, member, seen };
}

/** Lets every pending promise and timer of the fakes run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("the rebuild epoch is read on the advisory-lock session held since the join", () => {
  it("the epoch read fails at the join and a rebuild runs before the retry: the batch fetched before the rebuild is not applied, and the member rejoins", async () => {
    const { feed, db, session } = await setup();
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));

    // A rebalance; the read of the new generation's epoch fails (PostgreSQL away for a moment, the
    // lock's session with it), and its fetcher holds records 10..19 from the committed offset 10.
    const release = gate();
    session.next(connectionLost(), release.promise);
    const second = feed.join([0]);
    feed.listener.fetched(batch(second, 10, 19));
    // Frozen past the session timeout meanwhile: a rebuild empties the projection, the lock is
    // taken again afterwards, and the retried read sees the new epoch.
    db.rebuild();
    session.retake();
    release.open();
    await settle();
    expect(db.applied).toEqual(offsets(0, 9));
    expect(feed.committed()).toEqual(["commit 0@10 committed"]);
    await vi.waitFor(() => expect(feed.rejoins()).toEqual([`rejoin ${second}`]));

    // The generation after the rejoin reads the epoch on the session it joined with and starts
    // again from the offsets the rebuild reset.
    const third = feed.join([0]);
    feed.listener.fetched(batch(third, 0, 19));
    await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
    expect(feed.committed()[1]).toBe("commit 0@20 committed");
    expect(db.applied).toEqual([...offsets(0, 9), ...offsets(0, 19)]);
    expect(db.requests.at(-1)?.rebuildEpoch).toBe("1");
  });

  it("the lock session is lost between the join and the read: the generation's batches are dropped and the member rejoins once the lock is held again", async () => {
    const { feed, db, session } = await setup();
    const release = gate();
    session.next(release.promise);
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    // The read waits (a busy connection); the session dies, a rebuild runs, the lock is taken again.
    session.lose();
    db.rebuild();
    await settle();
    session.retake();
    release.open();
    await settle();
    expect(db.applied).toEqual([]);
    expect(feed.committed()).toEqual([]);
    await vi.waitFor(() => expect(feed.rejoins()).toEqual([`rejoin ${first}`]));
    // A later batch of the dropped generation is dropped too.
    feed.listener.fetched(batch(first, 10, 19));
    await settle();
    expect(db.applied).toEqual([]);
    const second = feed.join([0]);
    feed.listener.fetched(batch(second, 0, 19));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@20 committed"]));
    expect(db.applied).toEqual(offsets(0, 19));
  });

  it("a generation that joined while no lock session was held rejoins only once the lock is held again", async () => {
    const { feed, db, session } = await setup();
    session.lose();
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await settle();
    expect(feed.rejoins()).toEqual([]);
    expect(db.applied).toEqual([]);
    session.retake();
    await vi.waitFor(() => expect(feed.rejoins()).toEqual([`rejoin ${first}`]));
    const second = feed.join([0]);
    feed.listener.fetched(batch(second, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(db.applied).toEqual(offsets(0, 9));
  });

  it("a read that fails while the same session stays held is retried on it: no rejoin", async () => {
    const { feed, db, session, seen } = await setup();
    // A statement error that leaves the session alone (e.g. a query timeout).
    const failOnce = Object.assign(new Error("canceling statement due to statement timeout"), {
      code: "57014",
    });
    // The read at the join fails (nothing primed, no transaction waited for it yet); the first
    // transaction's read fails too, and the retry policy waits; the next read answers.
    const reads = vi
      .spyOn(session, "readRebuildEpoch")
      .mockRejectedValueOnce(failOnce)
      .mockRejectedValueOnce(failOnce);
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    expect(seen).toEqual(["retried 1 from 0"]);
    expect(reads).toHaveBeenCalledTimes(3);
    expect(reads.mock.calls.map(([serial]) => serial)).toEqual([1, 1, 1]);
    expect(feed.rejoins()).toEqual([]);
    expect(db.applied).toEqual(offsets(0, 9));
  });

  it("after PROJECTION_REBUILT the member rejoins at once instead of waiting for a rebalance nothing starts", async () => {
    const { feed, db } = await setup();
    const first = feed.join([0]);
    feed.listener.fetched(batch(first, 0, 9));
    await vi.waitFor(() => expect(feed.committed()).toEqual(["commit 0@10 committed"]));
    // The epoch was read before; a rebuild ran since (the member removed from the group meanwhile).
    db.rebuild();
    feed.listener.fetched(batch(first, 10, 19));
    await vi.waitFor(() => expect(feed.rejoins()).toEqual([`rejoin ${first}`]));
    expect(db.applied).toEqual(offsets(0, 9));
    const second = feed.join([0]);
    feed.listener.fetched(batch(second, 0, 19));
    await vi.waitFor(() => expect(feed.committed()).toHaveLength(2));
    expect(db.applied).toEqual([...offsets(0, 9), ...offsets(0, 19)]);
  });
});
