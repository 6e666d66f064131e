/**
 * The soak's checker (Jepsen's checker): the ledger state the log implies, computed by a reference
 * model that shares no code with the engine, compared with what PostgreSQL holds.
 *
 * The model reads every record of the topic from its log start offset to its high watermark and
 * applies each distinct event once, at its first occurrence: the ledger dedupes by `ce_id`
 * (`dedupe: { kind: "event-id", header: "ce_id" }`, src/projections/ledger/ledgerProjection.ts), and a
 * re-send carries the same `ce_id` and bytes at a later offset, in the same partition (same key), so
 * the first occurrence is the one the engine applies, and every later one is a duplicate. In offset
 * order per partition:
 * - credited / debited: balance ± amount;
 * - order paid: the order is `paid`, unless it is `shipped` already;
 * - order shipped: `shipped` if it is `paid`; otherwise nothing.
 *
 * Anomalies counted:
 * - **lost**: an event in the log whose id is not in `replayable.processed_events` (the id and the
 *   effect are written in one transaction, so its effect is missing), and any order whose state
 *   falls short of the model's;
 * - **applied twice**: per account, the part of `actual − expected` that a doubled event explains
 *   (a credit or debit of that account counted once more); what neither a lost nor a doubled event
 *   explains is **unexplained** (still a failure);
 * - **applied late**: an id recorded at a later offset than its first occurrence (the first was
 *   skipped, a later re-send applied: same state, but a record was passed over);
 * - **dead letters**: the stream holds only valid events, so any letter is a record not applied;
 * - **kafka lost**: an id the producer had an acknowledgement for that is not in the log (Kafka's
 *   loss, not the consumer's; counted apart).
 */
import type { Kafka } from "kafkajs";
import type pg from "pg";
import { randomBytes } from "node:crypto";
import type { ClusterAdmin } from "../../src/kafka/admin.js";

/** One event as the log holds it, at its first occurrence. */
export interface LogEvent {
  readonly id: string;
  readonly type: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly data: Readonly<Record<string, unknown>>;
  /** The value's bytes as text, to check that a re-send is byte-identical. */
  readonly raw: string;
  /** Occurrences in the log (1 + re-sends). */
  occurrences: number;
}

/** What the log holds: its distinct events in log order, and counts. */
export interface LogContents {
  readonly events: readonly LogEvent[];
  readonly records: number;
  /** Ids whose re-sends differ in bytes from the first occurrence (the generator never does this). */
  readonly conflicting: readonly string[];
  /** High watermark per partition when the read started. */
  readonly highWatermarks: readonly { partition: number; highWatermark: string }[];
}

/** The ledger's derived state. */
export interface LedgerTables {
  readonly balances: ReadonlyMap<string, bigint>;
  readonly orders: ReadonlyMap<string, "paid" | "shipped">;
}

/**
 * Reads every record of `topic` from the log start offset to the high watermark (taken at the
 * start) with a throwaway consumer group, and keeps each `ce_id`'s first occurrence.
 * @throws Error when the end is not reached within `timeoutMs`, or the consumer crashes.
 */
export async function readLog(
  kafka: Kafka,
  admin: ClusterAdmin,
  topic: string,
  timeoutMs = 180_000,
): Promise<LogContents> {
  const ends = await admin.topicOffsets(topic);
  const want = new Map(ends.map((e) => [e.partition, BigInt(e.highWatermark)]));
  const byPartition = new Map<number, { offset: bigint; id: string; type: string; raw: string }[]>();
  const reached = new Map<number, bigint>(ends.map((e) => [e.partition, BigInt(e.logStartOffset) - 1n]));
  const consumer = kafka.consumer({ groupId: `soak-check-${randomBytes(5).toString("hex")}` });
  let crash: Error | undefined;
  consumer.on(consumer.events.CRASH, (e) => (crash = e.payload.error));
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    const last = BigInt(e.payload.lastOffset);
    if (last > (reached.get(e.payload.partition) ?? -1n)) reached.set(e.payload.partition, last);
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const end = want.get(batch.partition) ?? 0n;
        const list = byPartition.get(batch.partition) ?? [];
        byPartition.set(batch.partition, list);
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          if (offset >= end) continue;
          if (list.length > 0 && list[list.length - 1]!.offset >= offset) continue; // re-fetched
          const header = (name: string) => m.headers?.[name]?.toString() ?? "";
          list.push({
            offset,
            id: header("ce_id"),
            type: header("ce_type"),
            raw: m.value?.toString("utf8") ?? "",
          });
        }
        return Promise.resolve();
      },
    });
    const deadline = Date.now() + timeoutMs;
    while ([...want].some(([p, hw]) => (reached.get(p) ?? -1n) < hw - 1n)) {
      if (crash) throw new Error(`the log reader crashed: ${crash.message}`);
      if (Date.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms reading ${topic} to its end`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await consumer.disconnect();
  }
  const first = new Map<string, LogEvent>();
  const conflicting = new Set<string>();
  const events: LogEvent[] = [];
  let records = 0;
  for (const p of [...byPartition.keys()].sort((a, b) => a - b)) {
    for (const r of byPartition.get(p)!) {
      records += 1;
      const seen = first.get(r.id);
      if (seen !== undefined) {
        seen.occurrences += 1;
        if (seen.raw !== r.raw || seen.type !== r.type) conflicting.add(r.id);
        continue;
      }
      const event: LogEvent = {
        id: r.id,
        type: r.type,
        partition: p,
        offset: r.offset,
        data: JSON.parse(r.raw) as Record<string, unknown>,
        raw: r.raw,
        occurrences: 1,
      };
      first.set(r.id, event);
      events.push(event);
    }
  }
  return {
    events,
    records,
    conflicting: [...conflicting],
    highWatermarks: ends.map((e) => ({ partition: e.partition, highWatermark: e.highWatermark })),
  };
}

/** The signed balance change of a credit or debit event; undefined for an order event. */
export function balanceDelta(event: LogEvent): { account: string; delta: bigint } | undefined {
  if (event.type !== "ledger.account.credited" && event.type !== "ledger.account.debited") return undefined;
  const amount = BigInt(event.data.amount as number);
  return {
    account: event.data.account as string,
    delta: event.type === "ledger.account.credited" ? amount : -amount,
  };
}

/**
 * The reference model: applies each event of `events` once, in the given order (log order per
 * partition; an order's events share a key, hence a partition).
 */
export function modelState(events: readonly LogEvent[]): LedgerTables {
  const balances = new Map<string, bigint>();
  const orders = new Map<string, "paid" | "shipped">();
  for (const e of events) {
    const d = balanceDelta(e);
    if (d !== undefined) {
      balances.set(d.account, (balances.get(d.account) ?? 0n) + d.delta);
    } else if (e.type === "ledger.order.paid") {
      const order = e.data.order as string;
      if (orders.get(order) !== "shipped") orders.set(order, "paid");
    } else if (e.type === "ledger.order.shipped") {
      const order = e.data.order as string;
      if (orders.get(order) === "paid") orders.set(order, "shipped");
    }
  }
  return { balances, orders };
}

/** What PostgreSQL holds for the ledger projection. */
export interface DatabaseState extends LedgerTables {
  /** processed_events of projection `ledger`: event id → where it was recorded. */
  readonly recorded: ReadonlyMap<string, { partition: number; offset: bigint }>;
  readonly deadLetters: number;
}

/** Reads the ledger tables, the event ids and the dead-letter count of projection `ledger`. */
export async function readDatabase(pool: pg.Pool, topic: string): Promise<DatabaseState> {
  const accounts = await pool.query<{ account_id: string; balance_cents: string }>(
    "SELECT account_id, balance_cents::text FROM ledger.ledger_accounts",
  );
  const orders = await pool.query<{ order_id: string; state: "paid" | "shipped" }>(
    "SELECT order_id, state FROM ledger.ledger_orders",
  );
  const ids = await pool.query<{ event_id: string; partition: number; offset: string }>(
    "SELECT event_id, partition, \"offset\"::text FROM replayable.processed_events WHERE projection = 'ledger' AND topic = $1",
    [topic],
  );
  const letters = await pool.query<{ n: string }>(
    "SELECT count(*)::text AS n FROM replayable.dead_letters WHERE projection = 'ledger' AND resolution IS NULL",
  );
  return {
    balances: new Map(accounts.rows.map((r) => [r.account_id, BigInt(r.balance_cents)])),
    orders: new Map(orders.rows.map((r) => [r.order_id, r.state])),
    recorded: new Map(
      ids.rows.map((r) => [r.event_id, { partition: r.partition, offset: BigInt(r.offset) }]),
    ),
    deadLetters: Number(letters.rows[0]!.n),
  };
}

/** One account whose balance differs from the model. */
export interface AccountAnomaly {
  readonly account: string;
  readonly expected: string;
  readonly actual: string;
  /** Events of the account the difference is explained by, when it is. */
  readonly lost: readonly string[];
  readonly doubled: readonly string[];
  /** True when no combination of up to two lost or doubled events explains the difference. */
  readonly unexplained: boolean;
}

/** The checker's verdict. */
export interface CheckResult {
  readonly ok: boolean;
  readonly records: number;
  readonly events: number;
  readonly accounts: number;
  readonly orders: number;
  /** Events whose effect is missing (not recorded, or an order short of its state). */
  readonly lost: number;
  /** Events whose effect counted twice (explained balance differences). */
  readonly appliedTwice: number;
  readonly unexplainedAccounts: number;
  readonly appliedLate: number;
  readonly deadLetters: number;
  readonly kafkaLost: number;
  readonly conflicting: number;
  readonly accountAnomalies: readonly AccountAnomaly[];
  readonly orderAnomalies: readonly { order: string; expected: string; actual: string }[];
  /** Up to 20 lost event ids with where they are in the log. */
  readonly lostSample: readonly { id: string; partition: number; offset: string }[];
  readonly lateSample: readonly { id: string; first: string; recorded: string }[];
}

/**
 * Compares the database with the model of `log`. `acked` (the producer's acknowledged ids) only
 * counts {@link CheckResult.kafkaLost}.
 */
export function check(
  log: LogContents,
  db: DatabaseState,
  acked: ReadonlySet<string> = new Set(),
): CheckResult {
  const expected = modelState(log.events);
  const inLog = new Set(log.events.map((e) => e.id));
  const lostIds = log.events.filter((e) => !db.recorded.has(e.id));
  const late = log.events.filter((e) => {
    const r = db.recorded.get(e.id);
    return r !== undefined && (r.partition !== e.partition || r.offset !== e.offset);
  });
  const lostSet = new Set(lostIds.map((e) => e.id));

  // Per account: the difference, explained by the lost events of that account first, then by up to
  // two doubled (or further lost) events.
  const eventsOf = new Map<string, { id: string; delta: bigint }[]>();
  for (const e of log.events) {
    const d = balanceDelta(e);
    if (d !== undefined)
      eventsOf.set(d.account, [...(eventsOf.get(d.account) ?? []), { id: e.id, delta: d.delta }]);
  }
  const accountAnomalies: AccountAnomaly[] = [];
  const accounts = new Set([...expected.balances.keys(), ...db.balances.keys()]);
  for (const account of [...accounts].sort()) {
    const want = expected.balances.get(account) ?? 0n;
    const got = db.balances.get(account) ?? 0n;
    if (want === got) continue;
    const own = eventsOf.get(account) ?? [];
    const lost = own.filter((e) => lostSet.has(e.id));
    let residual = got - want + lost.reduce((n, e) => n + e.delta, 0n);
    const doubled: string[] = [];
    const extraLost: string[] = [];
    if (residual !== 0n) {
      const single = own.find((e) => e.delta === residual) ?? own.find((e) => -e.delta === residual);
      if (single !== undefined) {
        (single.delta === residual ? doubled : extraLost).push(single.id);
        residual = 0n;
      } else {
        outer: for (let i = 0; i < own.length; i++) {
          for (let j = i + 1; j < own.length; j++) {
            for (const [si, sj] of [
              [1n, 1n],
              [1n, -1n],
              [-1n, 1n],
              [-1n, -1n],
            ] as const) {
              if (si * own[i]!.delta + sj * own[j]!.delta === residual) {
                (si === 1n ? doubled : extraLost).push(own[i]!.id);
                (sj === 1n ? doubled : extraLost).push(own[j]!.id);
                residual = 0n;
                break outer;
              }
            }
          }
        }
      }
    }
    accountAnomalies.push({
      account,
      expected: want.toString(),
      actual: got.toString(),
      lost: [...lost.map((e) => e.id), ...extraLost],
      doubled,
      unexplained: residual !== 0n,
    });
  }

  const orderAnomalies: { order: string; expected: string; actual: string }[] = [];
  for (const order of new Set([...expected.orders.keys(), ...db.orders.keys()])) {
    const want = expected.orders.get(order) ?? "absent";
    const got = db.orders.get(order) ?? "absent";
    if (want !== got) orderAnomalies.push({ order, expected: want, actual: got });
  }
  const orderLosses = orderAnomalies.filter(
    (o) => o.actual === "absent" || (o.expected === "shipped" && o.actual === "paid"),
  ).length;
  const extraLost = accountAnomalies.reduce((n, a) => n + a.lost.filter((id) => !lostSet.has(id)).length, 0);
  const appliedTwice = accountAnomalies.reduce((n, a) => n + a.doubled.length, 0);
  const unexplainedAccounts = accountAnomalies.filter((a) => a.unexplained).length;
  const kafkaLost = [...acked].filter((id) => !inLog.has(id)).length;
  const lost = lostIds.length + extraLost + orderLosses;
  return {
    ok:
      lost === 0 &&
      appliedTwice === 0 &&
      unexplainedAccounts === 0 &&
      orderAnomalies.length === 0 &&
      db.deadLetters === 0 &&
      late.length === 0 &&
      log.conflicting.length === 0 &&
      [...db.recorded.keys()].every((id) => inLog.has(id)),
    records: log.records,
    events: log.events.length,
    accounts: expected.balances.size,
    orders: expected.orders.size,
    lost,
    appliedTwice,
    unexplainedAccounts,
    appliedLate: late.length,
    deadLetters: db.deadLetters,
    kafkaLost,
    conflicting: log.conflicting.length,
    accountAnomalies,
    orderAnomalies: orderAnomalies.slice(0, 50),
    lostSample: lostIds
      .slice(0, 20)
      .map((e) => ({ id: e.id, partition: e.partition, offset: e.offset.toString() })),
    lateSample: late.slice(0, 20).map((e) => {
      const r = db.recorded.get(e.id)!;
      return { id: e.id, first: `${e.partition}:${e.offset}`, recorded: `${r.partition}:${r.offset}` };
    }),
  };
}
