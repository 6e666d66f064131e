/**
 * `defineProjection`: the typed way to write a projection in `replayable.config.ts`.
 * The value type `T` is what `decode` returns and what `apply` receives.
 */
import type { ApplyContext, DecodedRecord, DedupeKey } from "./projection.js";
import type { KafkaRecord } from "./record.js";

/**
 * A projection as the config file declares it: the owner of some tables and the handler that
 * writes them (docs/design.md "Words"). The engine calls `decode` and `apply` inside the
 * dedupe-then-effect transaction; see docs/projections.md.
 */
export interface ProjectionDefinition<T> {
  /**
   * Lower-case name (`[a-z][a-z0-9_]*`, at most 42 characters): keys the checkpoints, event ids,
   * dead letters and the migrations table `replayable.__drizzle_migrations_<name>`; also the
   * default consumer group id. Never rename a running projection: its dedupe state stays under
   * the old name.
   */
  readonly name: string;
  /** How a second delivery is recognised: `{ kind: "offset" }` or an event id from a header or field. */
  readonly dedupe: DedupeKey;
  /** Topics consumed when the operator names none (`--topic`, REPLAYABLE_TOPICS). */
  readonly topics: readonly string[];
  /**
   * The tables this projection writes, schema-qualified (`orders.order_totals`): `rebuild` empties
   * them, `checksum` fingerprints them, and start-up refuses a configuration whose tables are missing.
   */
  readonly tables: readonly string[];
  /**
   * Folder of this projection's migrations in drizzle-kit's layout (`meta/_journal.json` and one
   * `.sql` file per migration, as `drizzle-kit generate` writes them), relative to the config
   * file; `replayable migrate` applies them with drizzle's migrator.
   */
  readonly migrations?: string | URL;
  /**
   * Turns a record into the value `apply` needs. Pure; throw (preferably a PermanentRecordError)
   * for a record that can never be applied: it is dead-lettered.
   */
  decode(record: KafkaRecord): T;
  /**
   * Applies one fresh record inside the transaction (in a savepoint). A PermanentRecordError or a
   * PostgreSQL data/constraint error (SQLSTATE class 22/23) dead-letters the record; a transient
   * error (40001, 40P01, 08xxx) retries the whole transaction.
   */
  apply(ctx: ApplyContext, record: DecodedRecord<T>): Promise<void>;
  /**
   * Optional set-based apply of a batch's fresh records (in offset order). When it throws a
   * permanent error the engine rolls it back and applies the records one by one instead.
   */
  applyBatch?(ctx: ApplyContext, records: readonly DecodedRecord<T>[]): Promise<void>;
  /**
   * Opt in to blue/green versions (docs/design.md "Blue/green versions", docs/replay.md): each
   * version keeps the tables in schema `<name>_v<N>`, readers use the views `<name>.<table>` of
   * the live one, and `rebuild --blue-green`, `promote`, `rollback` and `drop-version` change
   * versions. `tables` are then named `<name>.<table>`, and `decode`/`apply` and the migrations
   * write unqualified table names (the engine sets `search_path` to the version's schema).
   * Default false: the projection's tables are used as named, as always.
   */
  readonly versioned?: boolean;
  /**
   * False when a record applied after later records of its partition can undo their effect (the
   * last write of a key wins): `dead-letters retry` then applies a letter only while nothing after
   * it in its partition has been applied, unless `--out-of-order` (docs/dead-letters.md "retry").
   * Default true.
   */
  readonly retryAfterLaterRecords?: boolean;
}

/**
 * Declares a typed projection for `defineConfig({ projections: [...] })`. Returns `definition`
 * unchanged: the config file's loader checks it (unknown fields, names, duplicates) at start-up.
 * @example
 * defineProjection({
 *   name: "orders",
 *   dedupe: { kind: "event-id", header: "ce_id" },
 *   topics: ["orders"],
 *   tables: ["orders.order_totals"],
 *   migrations: "./migrations/orders",
 *   decode: (record) => JSON.parse(record.value!.toString("utf8")) as OrderEvent,
 *   apply: async ({ client }, { value }) => {
 *     await client.query("INSERT INTO orders.order_totals ...", [value.id]);
 *   },
 * });
 */
export function defineProjection<T>(definition: ProjectionDefinition<T>): ProjectionDefinition<T> {
  return definition;
}
