/**
 * The variants of bench/eventIdCost.ts: each a table of its own in schema `eventid_cost` (or the
 * migrated `replayable.processed_events` for the shipped statement) and the statement that records
 * one batch's event ids in it. Only measurements: what ships is src/sql/insertEventIds.ts.
 */
import type pg from "pg";
import type { LedgerEvent } from "../src/projections/ledger/events.js";
import type { DecodedRecord } from "../src/projection.js";
import { insertEventIds, type EventIdRow } from "../src/sql/insertEventIds.js";

/** One transaction's records, sorted ids and where they were read. */
export interface Batch {
  readonly partition: number;
  /** The batch's ids with offset and digest, in offset order. */
  readonly rows: readonly EventIdRow[];
  readonly records: readonly DecodedRecord<LedgerEvent>[];
  readonly lastOffset: string;
  /** Rows of `rows` that re-send an id of the batch before (conflicts). */
  readonly resent: number;
}

/** A table shape and statement to measure. */
export interface Variant {
  readonly name: string;
  readonly what: string;
  readonly setup: readonly string[];
  /** Instead of the statement (timed; no WAL measurement): the shipped code. */
  readonly run?: (client: pg.PoolClient, batch: Batch, topic: string) => Promise<void>;
  /** The statement runs between SAVEPOINT and RELEASE SAVEPOINT. */
  readonly savepoint: boolean;
  readonly statement: (
    batch: Batch,
    topic: string,
  ) => {
    text: string;
    values: unknown[];
    /** What the engine would do with the result (e.g. look for conflicts when fewer rows went in). */
    check?: (client: pg.PoolClient, batch: Batch, result: pg.QueryResult) => Promise<void>;
  };
}

/** How the table differs from today's `replayable.processed_events`. */
interface Shape {
  /** `COLLATE "C"` on the text key columns. */
  readonly collateC?: boolean;
  /** A smallint projection id instead of the projection's name. */
  readonly projectionId?: boolean;
  readonly digest?: boolean;
  readonly processedAt?: boolean;
  readonly brin?: boolean;
  readonly pkFillfactor?: number;
  /** Unique key: "pk" (projection, event_id) B-tree; "hash" an exclusion constraint on event_id alone. */
  readonly key?: "pk" | "hash";
  /** Topic and partition as one smallint source id. */
  readonly sourceId?: boolean;
  /**
   * The unique key on a 64-bit hash of the id (`hashtextextended(event_id, 0)`, a bigint column)
   * instead of the id's text; the id stays a column, unindexed. Measures a fixed-size key only:
   * two ids with one hash would need a fallback the rig does not model.
   */
  readonly hashKey?: boolean;
}

/** How the statement differs from today's. */
interface Form {
  /** "anti-join": today's; "returning": RETURNING event_id, missing ids found in Node; "count": no RETURNING, rowCount. */
  readonly result?: "anti-join" | "returning" | "count";
  /** Without the MATERIALIZED CTE and ORDER BY (unnest's order). */
  readonly plain?: boolean;
  /** A plain INSERT (no ON CONFLICT): a conflict raises unique_violation. */
  readonly optimistic?: boolean;
  /** Look the ids up first (the same statement), insert only the ones not found, without ON CONFLICT. */
  readonly probe?: boolean;
  /** Wrap the statement in SAVEPOINT … RELEASE (the fallback an optimistic insert needs). */
  readonly savepoint?: boolean;
}

const DIGEST_BYTES = 32;
const NO_DIGEST = Buffer.alloc(DIGEST_BYTES);

function tableDdl(t: string, s: Shape): string[] {
  const c = s.collateC === true ? ` COLLATE "C"` : "";
  const cols = [
    s.projectionId === true ? `projection smallint NOT NULL` : `projection text${c} NOT NULL`,
    `event_id text${c} NOT NULL`,
    ...(s.hashKey === true ? [`id_hash bigint NOT NULL`] : []),
    ...(s.sourceId === true
      ? [`source smallint NOT NULL`]
      : [`topic text NOT NULL`, `partition integer NOT NULL`]),
    `"offset" bigint NOT NULL`,
    ...(s.digest === false ? [] : [`value_sha256 bytea`]),
    ...(s.processedAt === false ? [] : [`processed_at timestamptz NOT NULL DEFAULT now()`]),
  ];
  const ff = s.pkFillfactor === undefined ? "" : ` WITH (fillfactor = ${s.pkFillfactor})`;
  const key =
    s.key === "hash"
      ? `EXCLUDE USING hash (event_id WITH =)`
      : `PRIMARY KEY (projection, ${s.hashKey === true ? "id_hash" : "event_id"})${ff}`;
  const ddl = [`CREATE TABLE ${t} (${cols.join(", ")}, ${key})`];
  if (s.brin !== false) ddl.push(`CREATE INDEX ON ${t} USING brin ("offset")`);
  return ddl;
}

function statementOf(t: string, s: Shape, f: Form): Variant["statement"] {
  const cols = [
    "projection",
    "event_id",
    ...(s.hashKey === true ? ["id_hash"] : []),
    ...(s.sourceId === true ? ["source"] : ["topic", "partition"]),
    `"offset"`,
    ...(s.digest === false ? [] : ["value_sha256"]),
  ];
  const exprs = [
    s.projectionId === true ? "$1::smallint" : "$1",
    "e.id",
    ...(s.hashKey === true ? ["hashtextextended(e.id, 0)"] : []),
    ...(s.sourceId === true ? ["$2::smallint"] : ["$2", "$3"]),
    "e.off",
    ...(s.digest === false
      ? []
      : [
          `NULLIF(substring($6::bytea FROM (e.n::integer - 1) * ${DIGEST_BYTES} + 1 FOR ${DIGEST_BYTES}), $7::bytea)`,
        ]),
  ];
  const src = `unnest($4::text[], $5::bigint[]) WITH ORDINALITY AS e(id, off, n)`;
  let insert =
    f.plain === true
      ? `INSERT INTO ${t} (${cols.join(", ")}) SELECT ${exprs.join(", ")} FROM ${src} ON CONFLICT DO NOTHING`
      : `INSERT INTO ${t} (${cols.join(", ")}) SELECT ${exprs.join(", ")} FROM e ORDER BY e.n ON CONFLICT DO NOTHING`;
  if (f.optimistic === true) insert = insert.replace(" ON CONFLICT DO NOTHING", "");
  const prefix = f.plain === true ? "" : `WITH e AS MATERIALIZED (SELECT * FROM ${src}) `;
  let text: string;
  if (f.probe === true) {
    text = `WITH e AS MATERIALIZED (SELECT * FROM ${src}),
      seen AS MATERIALIZED (SELECT p.event_id, p.topic, p.partition, p."offset", p.value_sha256 FROM ${t} p
        WHERE p.projection = $1 AND p.event_id = ANY($4::text[])),
      ins AS (${insert.replace(" ORDER BY e.n", " WHERE NOT EXISTS (SELECT 1 FROM seen WHERE seen.event_id = e.id) ORDER BY e.n")})
      SELECT * FROM seen`;
  } else if ((f.result ?? "anti-join") === "anti-join") {
    const body = f.plain === true ? insert.replace(`FROM ${src}`, "FROM e") : insert;
    text = `WITH e AS ${f.plain === true ? "" : "MATERIALIZED "}(SELECT * FROM ${src}), ins AS (${body} RETURNING event_id)
      SELECT e.id AS event_id FROM e WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.event_id = e.id)`;
  } else if (f.result === "returning") text = `${prefix}${insert} RETURNING event_id`;
  else text = `${prefix}${insert}`;
  // Renumber the parameters the text uses as $1..$k (PostgreSQL cannot type one it never sees).
  const used = [1, 2, 3, 4, 5, 6, 7].filter((i) => text.includes(`$${i}`));
  text = text.replace(/\$(\d)/g, (_, d: string) => `$${used.indexOf(Number(d)) + 1}`);
  return (batch, topic) => {
    const sorted = [...batch.rows].sort((a, b) =>
      a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0,
    );
    const digests = Buffer.allocUnsafe(sorted.length * DIGEST_BYTES);
    sorted.forEach((r, i) => digests.write(r.valueSha256!, i * DIGEST_BYTES, DIGEST_BYTES, "hex"));
    const all: unknown[] = [
      s.projectionId === true ? 1 : "ledger",
      s.sourceId === true ? batch.partition + 1 : topic,
      batch.partition,
      sorted.map((r) => r.eventId),
      sorted.map((r) => r.offset),
      digests,
      NO_DIGEST,
    ];
    const values = used.map((i) => all[i - 1]);
    // What the engine would do with the result: today's statement reads where the ids it did not
    // insert were first seen with a second statement; the others only check the count.
    const check = async (client: pg.PoolClient, b: Batch, result: pg.QueryResult) => {
      if (f.probe === true) return;
      if ((f.result ?? "anti-join") === "anti-join") {
        if (result.rows.length === 0) return;
        await client.query({
          name: `prior_${t}`,
          text: `SELECT event_id, topic, partition, "offset"${s.digest === false ? "" : ", value_sha256"} FROM ${t}
            WHERE projection = $1 AND event_id = ANY($2::text[])`,
          values: [
            s.projectionId === true ? 1 : "ledger",
            result.rows.map((r: { event_id: string }) => r.event_id),
          ],
        });
      } else if (f.result === "count" && result.rowCount !== b.rows.length)
        throw new Error("unexpected conflict");
      else if (f.result === "returning" && result.rowCount !== b.rows.length)
        throw new Error("unexpected conflict");
    };
    return { text, values, check };
  };
}

function variant(name: string, what: string, s: Shape, f: Form = {}): Variant {
  const t = `eventid_cost.${name.replace(/[^a-z0-9]+/g, "_")}`;
  return {
    name,
    what,
    setup: tableDdl(t, s),
    statement: statementOf(t, s, f),
    savepoint: f.savepoint === true,
  };
}

/** Every variant, today's first. */
export const VARIANTS: readonly Variant[] = [
  {
    ...variant("shipped", "", {}),
    what: "src/sql/insertEventIds.ts on the migrated replayable.processed_events",
    setup: [],
    run: async (client, batch, topic) => {
      const { conflicts } = await insertEventIds(client, "ledger", topic, batch.partition, batch.rows);
      if (conflicts.size !== batch.resent)
        throw new Error(`${conflicts.size} conflicts, ${batch.resent} re-sent`);
    },
  },
  variant("today", "today's table and statement (a copy)", {}),
  variant("no-brin", "without the BRIN index on offset", { brin: false }),
  variant("no-digest", "without value_sha256", { digest: false }),
  variant("no-processed-at", "without processed_at", { processedAt: false }),
  variant("collate-c", `projection, event_id COLLATE "C"`, { collateC: true }),
  variant("projection-id", "smallint projection id", { projectionId: true }),
  variant("projection-id+c", `smallint projection id, event_id COLLATE "C"`, {
    projectionId: true,
    collateC: true,
  }),
  variant("source-id", "smallint source id for topic+partition", { sourceId: true }),
  variant("returning", "RETURNING event_id, no anti-join", {}, { result: "returning" }),
  variant("count", "no RETURNING, rowCount compared", {}, { result: "count" }),
  variant("plain", "no MATERIALIZED / ORDER BY", {}, { plain: true }),
  variant("plain+count", "no CTE at all, rowCount compared", {}, { plain: true, result: "count" }),
  variant("pk-ff100", "primary key fillfactor 100", { pkFillfactor: 100 }),
  variant("hash-excl", "EXCLUDE USING hash (event_id) instead of the B-tree", { key: "hash" }),
  variant(
    "optimistic",
    "plain INSERT, no ON CONFLICT (a conflict raises)",
    {},
    { result: "count", optimistic: true },
  ),
  variant(
    "probe+insert",
    "look ids up, plain INSERT of the rest, one statement",
    {},
    { optimistic: true, probe: true },
  ),
  variant(
    "probe+insert+sp",
    "probe+insert inside SAVEPOINT … RELEASE",
    {},
    { optimistic: true, probe: true, savepoint: true },
  ),
  variant(
    "probe+insert+sp+id+c",
    "probe+insert+sp, smallint projection id, COLLATE C",
    { projectionId: true, collateC: true },
    { optimistic: true, probe: true, savepoint: true },
  ),
  variant(
    "probe+insert+sp+c",
    "probe+insert+sp, COLLATE C",
    { collateC: true },
    { optimistic: true, probe: true, savepoint: true },
  ),
  variant(
    "probe+insert+sp+c-brin-at",
    "probe+insert+sp+c, no BRIN, no processed_at",
    { collateC: true, brin: false, processedAt: false },
    { optimistic: true, probe: true, savepoint: true },
  ),
  variant(
    "hash-excl+probe+sp",
    "probe+insert+sp on EXCLUDE USING hash (event_id), no B-tree",
    { key: "hash" },
    { optimistic: true, probe: true, savepoint: true },
  ),
  variant("hash-key+c", "unique key on a bigint hash of the id, COLLATE C", {
    collateC: true,
    hashKey: true,
  }),
  variant(
    "hash-key-minimal",
    "minimal, with the unique key on a bigint hash of the id (floor)",
    {
      projectionId: true,
      collateC: true,
      brin: false,
      digest: false,
      processedAt: false,
      sourceId: true,
      hashKey: true,
    },
    { plain: true, result: "count" },
  ),
  variant(
    "minimal",
    "id + C + count + no CTE, no brin/digest/processed_at (floor)",
    {
      projectionId: true,
      collateC: true,
      brin: false,
      digest: false,
      processedAt: false,
      sourceId: true,
    },
    { plain: true, result: "count" },
  ),
];
