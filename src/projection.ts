/**
 * What a projection is: a name, a dedupe key, a decode step and an apply step.
 * The engine calls them inside the dedupe-then-effect transaction (docs/design.md).
 */
import type pg from "pg";
import type { Logger } from "pino";
import type { Db } from "./db/pool.js";
import type { KafkaRecord } from "./record.js";

/**
 * How a second delivery is recognised (docs/design.md "dedupe key"):
 * - `offset`: (topic, partition, offset); the checkpoint alone is the set of applied offsets.
 *   A producer that re-sends an event makes a new record at a new offset, which is applied again.
 * - `event-id` from a header (e.g. CloudEvents binary mode `ce_id`) or a top-level string field of
 *   the JSON value (e.g. `id`): each id is applied once per projection, at whatever offset it comes.
 */
export type DedupeKey =
  | { readonly kind: "offset" }
  | { readonly kind: "event-id"; readonly header: string }
  | { readonly kind: "event-id"; readonly field: string };

/**
 * The kinds of dedupe key a duplicate was recognised by: below the checkpoint (`offset`), or an
 * event id already recorded (`event_id`); the `key` label of `replayable_duplicates_total`.
 */
export type DuplicateKeyKind = "offset" | "event_id";

/** What an apply step receives: the open transaction's client and a drizzle handle over it. */
export interface ApplyContext {
  /** The checked-out client, inside BEGIN; never COMMIT or ROLLBACK it yourself. */
  readonly client: pg.PoolClient;
  /** drizzle-orm over the same client (same transaction). */
  readonly db: Db;
  /** Logger with topic, partition and group in scope. */
  readonly log: Logger;
}

/** A record with its decoded value and, in event-id mode, its event id. */
export interface DecodedRecord<T> {
  readonly record: KafkaRecord;
  readonly value: T;
  readonly eventId: string | undefined;
}

/**
 * A projection: the owner of some derived tables and the handler that writes them.
 * All dedupe state is keyed by `name` (docs/design.md "Words").
 *
 * `decode` must be pure; throw (preferably a PermanentRecordError) for a record that can never be
 * applied: the engine dead-letters it. `apply` runs in a savepoint; a PostgreSQL data or constraint
 * error (SQLSTATE class 22/23) or a PermanentRecordError dead-letters the record, a transient error
 * (40001, 40P01, 08xxx, ...) aborts and retries the whole transaction.
 */
export interface Projection<T = unknown> {
  /** Lower-case name; keys checkpoints and event ids. */
  readonly name: string;
  readonly dedupe: DedupeKey;
  /** Topics consumed when the operator names none. */
  readonly defaultTopics: readonly string[];
  /** Schema-qualified derived tables, e.g. `ledger.ledger_accounts`; rebuild empties them. */
  readonly tables: readonly string[];
  /** Turns a record into the value `apply` needs; throws for a record that can never be applied. */
  decode(record: KafkaRecord): T;
  /** Applies one fresh record inside the transaction. */
  apply(ctx: ApplyContext, record: DecodedRecord<T>): Promise<void>;
  /**
   * Optional set-based apply of a batch's fresh records (in offset order). When it throws a
   * permanent error the engine rolls it back and applies the records one by one instead.
   */
  applyBatch?(ctx: ApplyContext, records: readonly DecodedRecord<T>[]): Promise<void>;
  /**
   * A schema the engine sets as the transaction's `search_path` (`SET LOCAL`) before the
   * projection's statements: set for a blue/green version (`<name>_v<N>`, docs/design.md
   * "Blue/green versions"), whose code writes unqualified table names. Absent: the server's.
   */
  readonly searchPath?: string;
  /**
   * False when applying a record after later records of its partition can undo their effect: the
   * last write wins (an upsert or delete by key), so a record re-applied late overwrites a newer
   * value of its key or brings back a deleted row. `dead-letters retry` then applies a letter only
   * while every later offset of its partition below the checkpoint is a dead letter not applied
   * (src/sql/laterOffsets.ts; a transaction marker blocks it too), unless the operator passes
   * `--out-of-order`; a rebuild re-applies the log in order instead. Default true: a retried letter is applied after later records (right for commutative
   * effects such as the ledger's credits and debits). The upsert sink sets it to false.
   */
  readonly retryAfterLaterRecords?: boolean;
}
