/**
 * The dry run of `drop-version` (the default; `--execute` drops): what {@link dropVersion} would
 * delete, counted without changing anything, or why it would be refused. Like `replay`, `rebuild`
 * and `prune`, nothing changes until the operator has seen this.
 */
import type pg from "pg";
import type { ClusterAdmin } from "../kafka/admin.js";
import type { Projection } from "../projection.js";
import { countDedupeState, type TableRowCount } from "../sql/dropVersionCounts.js";
import { versionMigrationsTable } from "./createVersion.js";
import { droppableRefusal, droppedTables, type DropOptions, type DropOutcome } from "./dropVersion.js";
import { resolveVersion } from "./resolveVersion.js";
import { versionKey } from "./versionNames.js";

/** What a drop-version would delete; counts are decimal strings. */
export interface DropPlan {
  readonly kind: "plan";
  readonly version: number;
  readonly state: string;
  readonly schema: string;
  /** Its tables (names without the schema) with their row counts, and MD5s with `checksums`. */
  readonly tables: readonly (TableRowCount & { readonly md5?: string })[];
  /** In schema `replayable`. */
  readonly migrationsTable: string;
  readonly dedupe: { checkpoints: string; eventIds: string; deadLetters: string };
  /** The version's consumer group and on how many partitions it has committed offsets. */
  readonly group: { readonly groupId: string; readonly committedPartitions: number };
}

/**
 * What dropping version `version` of `projection` would delete, or the refusal a drop would get now
 * (the live version, members in its group). Counts the rows of its tables; `options.checksums` adds
 * each table's MD5 (a read and sort of every row).
 * @throws ReplayableError CONFIG_INVALID for a version that does not exist or was dropped already.
 */
export async function planDropVersion(
  admin: ClusterAdmin,
  pool: pg.Pool,
  projection: Projection<unknown>,
  version: number,
  options: DropOptions = {},
): Promise<DropPlan | Extract<DropOutcome, { kind: "refused" }>> {
  const { row } = await resolveVersion(pool, projection, version);
  const refusal = await droppableRefusal(admin, projection.name, row);
  if (refusal !== undefined) return refusal;
  const prefix = `${row.schemaName}.`;
  const tables = (await droppedTables(pool, row.schemaName, options.checksums === true)).map((t) => ({
    ...t,
    table: t.table.startsWith(prefix) ? t.table.slice(prefix.length) : t.table,
  }));
  return {
    kind: "plan",
    version,
    state: row.state,
    schema: row.schemaName,
    tables,
    migrationsTable: versionMigrationsTable(projection.name, version),
    dedupe: await countDedupeState(pool, versionKey(projection.name, version)),
    group: {
      groupId: row.groupId,
      committedPartitions: (await admin.groupCommittedOffsets(row.groupId)).length,
    },
  };
}
