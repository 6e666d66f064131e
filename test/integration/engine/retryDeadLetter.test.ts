/**
 * `dead-letters retry` at the engine level against a real PostgreSQL: a dead letter re-applied
 * through the same dedupe path is applied once and resolved; one that fails again counts an attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyBatch } from "../../../src/engine/applyBatch.js";
import { retryDeadLetter, type RetryOutcome } from "../../../src/engine/retryDeadLetter.js";
import { PermanentRecordError } from "../../../src/errors.js";
import { createLogger } from "../../../src/logger.js";
import type { Projection } from "../../../src/projection.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import type { KafkaRecord } from "../../../src/record.js";
import { emptyProjection } from "../../../src/sql/emptyProjection.js";
import { insertRebuild } from "../../../src/sql/insertRebuild.js";
import { supersedeDeadLetters } from "../../../src/sql/supersedeDeadLetters.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "../../helpers/stack.js";
import { readRebuildEpoch } from "../../../src/sql/lockCheckpoint.js";

let db: TestDatabase;
const log = createLogger("silent");

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query("CREATE TABLE public.switches (name text PRIMARY KEY)");
  await db.pool.query("CREATE TABLE public.effects (topic text, offset_ bigint, body text)");
});

afterAll(async () => {
  await db?.drop();
});

/** An offset-deduped projection whose apply refuses records until switch `<topic>` exists. */
const gated: Projection<string> = {
  name: "gated",
  dedupe: { kind: "offset" },
  defaultTopics: [],
  tables: ["public.effects"],
  decode: (record) => record.value?.toString("utf8") ?? "",
  async apply({ client }, { record, value }) {
    const on = await client.query("SELECT 1 FROM public.switches WHERE name = $1", [record.topic]);
    if (on.rowCount === 0) throw new PermanentRecordError("APPLY_REJECTED", `switch ${record.topic} is off`);
    await client.query("INSERT INTO public.effects VALUES ($1, $2, $3)", [
      record.topic,
      record.offset,
      value,
    ]);
  },
};

function credit(topic: string, offset: number, ceId: string, amount: number, pad = 0): KafkaRecord {
  return {
    topic,
    partition: 0,
    offset: String(offset),
    timestamp: String(Date.UTC(2026, 0, 1) + offset),
    key: Buffer.from(topic),
    value: Buffer.from(JSON.stringify({ account: topic, amount, pad: "x".repeat(pad) })),
    headers: {
      ce_specversion: [Buffer.from("1.0")],
      ce_id: [Buffer.from(ceId)],
      ce_type: [Buffer.from("ledger.account.credited")],
    },
  };
}

async function applyRecords<T>(projection: Projection<T>, records: KafkaRecord[], maxRecordBytes = 1000) {
  const client = await db.pool.connect();
  try {
    return await applyBatch({
      client,
      projection,
      topic: records[0]!.topic,
      partition: 0,
      records,
      maxRecordBytes,
      // A consumer that joined now.
      rebuildEpoch: await readRebuildEpoch(client, projection.name),
      log,
    });
  } finally {
    client.release();
  }
}

async function retry<T>(projection: Projection<T>, id: string, maxRecordBytes = 1000): Promise<RetryOutcome> {
  const client = await db.pool.connect();
  try {
    return await retryDeadLetter({ client, projection, id, maxRecordBytes, resolvedBy: "test@host", log });
  } finally {
    client.release();
  }
}

async function letter(id: string) {
  const r = await db.pool.query<{
    attempts: number;
    error_code: string;
    resolution: string | null;
    resolved_by: string | null;
    last_attempt_at: Date | null;
  }>(
    "SELECT attempts, error_code, resolution, resolved_by, last_attempt_at FROM replayable.dead_letters WHERE id = $1",
    [id],
  );
  return r.rows[0];
}

async function balance(account: string): Promise<string | undefined> {
  const r = await db.pool.query<{ balance_cents: string }>(
    "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = $1",
    [account],
  );
  return r.rows[0]?.balance_cents;
}

describe("retryDeadLetter", () => {
  it("offset dedupe: a record that now succeeds is applied once and resolved; a second retry does nothing", async () => {
    const topic = uniqueName("gated");
    const record: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("hello") };
    const first = await applyRecords(gated, [record]);
    const id = first.deadLettered[0]!.id;
    expect(await retry(gated, id)).toEqual({
      kind: "failed",
      code: "APPLY_REJECTED",
      message: `switch ${topic} is off`,
    });
    expect(await letter(id)).toMatchObject({
      attempts: 2,
      resolution: null,
      last_attempt_at: expect.any(Date) as Date,
    });

    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    expect(await retry(gated, id)).toEqual({ kind: "applied" });
    expect(await letter(id)).toMatchObject({ attempts: 3, resolution: "applied", resolved_by: "test@host" });
    expect(await retry(gated, id)).toEqual({ kind: "already_resolved", resolution: "applied" });
    const effects = await db.pool.query("SELECT body FROM public.effects WHERE topic = $1", [topic]);
    expect(effects.rows).toEqual([{ body: "hello" }]);
  });

  it("regression: a retry whose locks another session holds gives up after lockTimeoutMs, changing nothing (it waited without a limit; break-it review)", async () => {
    const topic = uniqueName("gated");
    const sink: Projection<string> = { ...gated, name: "gated_lww", retryAfterLaterRecords: false };
    const first = await applyRecords(sink, [{ ...credit(topic, 0, "-", 0), value: Buffer.from("x") }]);
    const id = first.deadLettered[0]!.id;
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    const holder = await db.pool.connect();
    const client = await db.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM replayable.checkpoints WHERE projection = $1 FOR UPDATE", [
        sink.name,
      ]);
      const waited = retryDeadLetter({
        client,
        projection: sink,
        id,
        maxRecordBytes: 1000,
        resolvedBy: "test@host",
        lockTimeoutMs: 200,
        log,
      });
      await expect(waited).rejects.toMatchObject({ code: "55P03" });
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
      client.release();
    }
    expect(await letter(id)).toMatchObject({ attempts: 1, resolution: null });
    expect(await retry(sink, id)).toEqual({ kind: "applied" });
  });

  it("event-id dedupe: the letter's own recorded event id is not a duplicate; a later re-send is", async () => {
    const topic = uniqueName("acc");
    const big = credit(topic, 0, `${topic}-1`, 40, 2000);
    const first = await applyRecords(ledgerProjection, [big, credit(topic, 1, `${topic}-2`, 2)]);
    expect(first.deadLettered.map((d) => d.code)).toEqual(["RECORD_TOO_LARGE"]);
    expect(await balance(topic)).toBe("2");
    const id = first.deadLettered[0]!.id;

    expect(await retry(ledgerProjection, id, 1000)).toMatchObject({
      kind: "failed",
      code: "RECORD_TOO_LARGE",
    });
    expect(await retry(ledgerProjection, id, 10_000)).toEqual({ kind: "applied" });
    expect(await balance(topic)).toBe("42");
    // The producer re-sends the same event later: a duplicate, not a second credit.
    const resend = await applyRecords(ledgerProjection, [{ ...big, offset: "2" }], 10_000);
    expect(resend.duplicates.event_id).toBe(1);
    expect(await balance(topic)).toBe("42");
  });

  it("event-id dedupe: resolved as duplicate when the event was applied from another record meanwhile", async () => {
    const topic = uniqueName("acc");
    const big = credit(topic, 0, `${topic}-1`, 40, 2000);
    const id = (await applyRecords(ledgerProjection, [big])).deadLettered[0]!.id;
    // As 0.1.0 did for RECORD_TOO_LARGE: the id was never recorded, so a re-send was applied.
    await db.pool.query("DELETE FROM replayable.processed_events WHERE event_id = $1", [`${topic}-1`]);
    await applyRecords(ledgerProjection, [{ ...big, offset: "1" }], 10_000);
    expect(await balance(topic)).toBe("40");
    expect(await retry(ledgerProjection, id, 10_000)).toEqual({ kind: "duplicate" });
    expect(await letter(id)).toMatchObject({ resolution: "duplicate" });
    expect(await balance(topic)).toBe("40");
  });

  it("a reused event id fails again with EVENT_ID_REUSED and counts the attempt", async () => {
    const topic = uniqueName("acc");
    const result = await applyRecords(ledgerProjection, [
      credit(topic, 0, `${topic}-1`, 5),
      credit(topic, 1, `${topic}-1`, 6),
    ]);
    const id = result.deadLettered[0]!.id;
    expect(await retry(ledgerProjection, id)).toMatchObject({ kind: "failed", code: "EVENT_ID_REUSED" });
    expect(await letter(id)).toMatchObject({ attempts: 2, error_code: "EVENT_ID_REUSED", resolution: null });
    expect(await balance(topic)).toBe("5");
  });

  it("two retries of one letter at once: one applies it, the other finds it resolved", async () => {
    const topic = uniqueName("acc");
    const id = (await applyRecords(ledgerProjection, [credit(topic, 0, `${topic}-1`, 7, 2000)]))
      .deadLettered[0]!.id;
    const outcomes = await Promise.all([
      retry(ledgerProjection, id, 10_000),
      retry(ledgerProjection, id, 10_000),
    ]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(["already_resolved", "applied"]);
    expect(await balance(topic)).toBe("7");
  });

  it("a record read again after its checkpoint was reset keeps one unresolved dead letter with attempts 2", async () => {
    const topic = uniqueName("gated");
    const record: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("again") };
    const id = (await applyRecords(gated, [record])).deadLettered[0]!.id;
    await db.pool.query("DELETE FROM replayable.checkpoints WHERE topic = $1", [topic]);
    const second = await applyRecords(gated, [record]);
    expect(second.deadLettered[0]!.id).toBe(id);
    expect(await letter(id)).toMatchObject({ attempts: 2, resolution: null });
  });

  it("not_found for an unknown id", async () => {
    expect(await retry(gated, "987654321")).toEqual({ kind: "not_found" });
  });

  /**
   * What `rebuild`'s database step did before dead letters were resolved by it (and what a rebuild
   * by such a version left behind): empty the projection and write the audit row, handing
   * (topic, 0) back to the consumer from offset 0.
   */
  async function rebuildLeavingLetters(
    projection: Projection<unknown>,
    topic: string,
    to = "0",
  ): Promise<string> {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await emptyProjection(client, projection.name, []);
      const id = await insertRebuild(client, {
        projection: projection.name,
        groupId: "g",
        osUser: "test",
        host: "host",
        forced: false,
        offsets: { partitions: [{ topic, partition: 0, from: "1", to }], missingTopics: [] },
      });
      await client.query("COMMIT");
      return id;
    } finally {
      client.release();
    }
  }

  /** A rebuild as `rebuild` runs it: the unresolved letters it hands back superseded, then {@link rebuildLeavingLetters}. */
  async function rebuildSupersedingLetters(projection: Projection<unknown>, topic: string): Promise<void> {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await supersedeDeadLetters(
        client,
        projection.name,
        [{ topic, partition: 0, fromOffset: "0" }],
        "test@host",
      );
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    await rebuildLeavingLetters(projection, topic);
  }

  it("`dead-letters retry` after a rebuild applies a record twice: offset dedupe", async () => {
    const topic = uniqueName("gated");
    const record: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("rebuilt") };
    const id = (await applyRecords(gated, [record])).deadLettered[0]!.id;
    // The cause is fixed; a rebuild hands the record back to the consumer, which applies it.
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    const rebuildId = await rebuildLeavingLetters(gated, topic);
    expect((await applyRecords(gated, [record])).applied).toBe(1);

    expect(await retry(gated, id)).toEqual({ kind: "superseded", rebuildId });
    expect(await letter(id)).toMatchObject({ resolution: "superseded", resolved_by: "test@host" });
    const effects = await db.pool.query("SELECT body FROM public.effects WHERE topic = $1", [topic]);
    expect(effects.rows).toEqual([{ body: "rebuilt" }]);
  });

  it("`dead-letters retry` after a rebuild applies a record twice: event-id dedupe", async () => {
    const topic = uniqueName("acc");
    const big = credit(topic, 0, `${topic}-1`, 40, 2000);
    const id = (await applyRecords(ledgerProjection, [big])).deadLettered[0]!.id;
    const rebuildId = await rebuildLeavingLetters(ledgerProjection, topic);
    expect((await applyRecords(ledgerProjection, [big], 10_000)).applied).toBe(1);
    expect(await balance(topic)).toBe("40");

    expect(await retry(ledgerProjection, id, 10_000)).toEqual({ kind: "superseded", rebuildId });
    expect(await balance(topic)).toBe("40");
  });

  it("a letter whose record a forced rebuild did not hand back (below the new log start) is retried as usual", async () => {
    const topic = uniqueName("gated");
    const record: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("gone") };
    const id = (await applyRecords(gated, [record])).deadLettered[0]!.id;
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    await rebuildLeavingLetters(gated, topic, "1");
    expect(await retry(gated, id)).toEqual({ kind: "applied" });
    const effects = await db.pool.query("SELECT body FROM public.effects WHERE topic = $1", [topic]);
    expect(effects.rows).toEqual([{ body: "gone" }]);
  });

  it("regression: last write wins: a later record whose letter a rebuild superseded, applied by the rebuilt run, still holds the retry back (it was counted as unapplied; break-it review)", async () => {
    const topic = uniqueName("gated");
    const sink: Projection<string> = { ...gated, name: "gated_lww_rebuilt", retryAfterLaterRecords: false };
    const old: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("old".padEnd(2000, ".")) };
    const newer: KafkaRecord = { ...credit(topic, 1, "-", 0), value: Buffer.from("new") };
    // @0 is too large, @1 is refused (its switch is off): two letters.
    expect((await applyRecords(sink, [old, newer])).deadLettered).toHaveLength(2);
    // A rebuild hands both back and supersedes their letters.
    await rebuildSupersedingLetters(sink, topic);
    // The rebuilt run: @0 is too large again (a new letter), @1 is applied now.
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    const rebuilt = await applyRecords(sink, [old, newer]);
    expect(rebuilt.applied).toBe(1);
    const id = rebuilt.deadLettered[0]!.id;

    expect(await retry(sink, id, 10_000)).toEqual({ kind: "later_records", checkpoint: "2", other: "1" });
    const effects = await db.pool.query("SELECT body FROM public.effects WHERE topic = $1", [topic]);
    expect(effects.rows).toEqual([{ body: "new" }]);
  });

  it("regression: last write wins: a later record whose letter was discarded before a rebuild, applied by the rebuilt run, still holds the retry back (the discarded letter was counted as unapplied; review finding)", async () => {
    const topic = uniqueName("gated");
    const sink: Projection<string> = { ...gated, name: "gated_lww_discarded", retryAfterLaterRecords: false };
    const old: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("old".padEnd(2000, ".")) };
    const newer: KafkaRecord = { ...credit(topic, 1, "-", 0), value: Buffer.from("new") };
    const first = await applyRecords(sink, [old, newer]);
    expect(first.deadLettered).toHaveLength(2);
    // The operator discards @1's letter; the rebuild supersedes only the unresolved one (@0's).
    await db.pool.query(
      "UPDATE replayable.dead_letters SET resolution = 'discarded', resolved_at = now(), resolved_by = 'op' WHERE id = $1",
      [first.deadLettered[1]!.id],
    );
    await rebuildSupersedingLetters(sink, topic);
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    const rebuilt = await applyRecords(sink, [old, newer]);
    expect(rebuilt.applied).toBe(1);
    expect(await retry(sink, rebuilt.deadLettered[0]!.id, 10_000)).toEqual({
      kind: "later_records",
      checkpoint: "2",
      other: "1",
    });
    const effects = await db.pool.query("SELECT body FROM public.effects WHERE topic = $1", [topic]);
    expect(effects.rows).toEqual([{ body: "new" }]);
  });

  it("last write wins: a letter written before a rebuild does not count for the rebuilt run, nor hold a retry back that a new letter at its offset allows", async () => {
    const topic = uniqueName("gated");
    const sink: Projection<string> = { ...gated, name: "gated_lww_applied", retryAfterLaterRecords: false };
    const a: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("a".padEnd(2000, ".")) };
    const b: KafkaRecord = { ...credit(topic, 1, "-", 0), value: Buffer.from("b".padEnd(2000, ".")) };
    // Before the rebuild: @1's letter was retried and applied.
    const first = await applyRecords(sink, [a, b]);
    expect(first.deadLettered).toHaveLength(2);
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    expect(await retry(sink, first.deadLettered[1]!.id, 10_000)).toEqual({ kind: "applied" });
    // The rebuild, as `rebuild` runs it: @0's unresolved letter superseded, the projection emptied.
    await rebuildSupersedingLetters(sink, topic);
    // The rebuilt run dead-letters both again (too large): @1 is a letter left unapplied now.
    const rebuilt = await applyRecords(sink, [a, b]);
    expect(rebuilt.deadLettered).toHaveLength(2);
    expect(await retry(sink, rebuilt.deadLettered[0]!.id, 10_000)).toEqual({ kind: "applied" });
  });

  it("a letter written after a rebuild is retried as usual", async () => {
    const topic = uniqueName("gated");
    await rebuildLeavingLetters(gated, topic);
    const record: KafkaRecord = { ...credit(topic, 0, "-", 0), value: Buffer.from("after") };
    const id = (await applyRecords(gated, [record])).deadLettered[0]!.id;
    await db.pool.query("INSERT INTO public.switches VALUES ($1)", [topic]);
    expect(await retry(gated, id)).toEqual({ kind: "applied" });
  });
});
