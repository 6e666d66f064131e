/**
 * `drop-version`: removes a version that is not live (docs/design.md "Blue/green versions"). Kafka
 * first: its consumer group (with its committed offsets) is deleted; then the database, in one
 * transaction: its schema (its tables), migrations table and dedupe state (checkpoints, event ids,
 * dead letters under `<name>@v<N>`), its registry row marked `dropped` (the number is never
 * reused) and an audit row with its last checkpoints, its group's last committed offsets and its
 * tables' row counts (and MD5s with `checksums`). Refused for the live version, while a `run` of the version holds its advisory
 * lock, and while its consumer group has members.
 *
 * Why Kafka first: the coordinator refuses to delete a group with members (NON_EMPTY_GROUP), so a
 * member that joined after the check is never cut off from a dropped schema; and a crash between the
 * steps leaves a registered version with its tables and checkpoints intact but no committed
 * offsets, which is consistent (a `run` of it re-reads from the log start offset and skips up to its
 * checkpoints as duplicates) and is finished by running `drop-version` again (a group already gone
 * is fine). The reverse order would leave a group with committed offsets for a version whose state
 * is gone.
 */
import type pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { failpoint } from "../support/failpoints.js";
import type { CommittedOffset, ClusterAdmin } from "../kafka/admin.js";
import type { Projection } from "../projection.js";
import { withExclusiveProjectionLock, projectionLockedMessage } from "../replay/exclusiveLock.js";
import { groupActiveMessage } from "../replay/groupActivity.js";
import {
  insertVersionAudit,
  selectVersions,
  setVersionState,
  type VersionRow,
} from "../sql/projectionVersions.js";
import { readCheckpoints, type CheckpointRow } from "../sql/readCheckpoints.js";
import { tableChecksums, type TableChecksum } from "../sql/tableChecksums.js";
import { tableRowCounts, type TableRowCount } from "../sql/dropVersionCounts.js";
import { deleteDedupeState, dropVersionSchema, schemaTables } from "../sql/versionViews.js";
import { versionMigrationsTable } from "./createVersion.js";
import { operator } from "./operator.js";
import { resolveVersion } from "./resolveVersion.js";
import { versionKey } from "./versionNames.js";

/** What happened to the version's consumer group: deleted now, or already gone (a rerun). */
export type GroupDeletion = "deleted" | "absent";

/** How a drop-version ended. Row counts are decimal strings. */
export type DropOutcome =
  | {
      readonly kind: "dropped";
      readonly version: number;
      readonly schema: string;
      readonly auditId: string;
      readonly deleted: { checkpoints: string; eventIds: string; deadLetters: string };
      readonly group: { readonly groupId: string; readonly deletion: GroupDeletion };
      /** The version's checkpoints when it was dropped. */
      readonly lastCheckpoints: readonly CheckpointRow[];
    }
  | {
      readonly kind: "refused";
      readonly reason: "LIVE_VERSION" | "PROJECTION_LOCKED" | "GROUP_ACTIVE";
      readonly message: string;
    };

type Refusal = Extract<DropOutcome, { kind: "refused" }>;

const liveRefusal = (projection: string, version: number, meanwhile: boolean): Refusal => ({
  kind: "refused",
  reason: "LIVE_VERSION",
  message: meanwhile
    ? `version ${version} of ${projection} became live meanwhile; nothing dropped`
    : `version ${version} is the live version of ${projection}: readers use it. Promote another version (or roll back) first.`,
});

/**
 * Why version `row` of `projection` cannot be dropped now (it is live, or its consumer group has
 * members), or undefined. Shared by {@link dropVersion} and its dry run (dropVersionPlan.ts).
 */
export async function droppableRefusal(
  admin: ClusterAdmin,
  projection: string,
  row: VersionRow,
): Promise<Refusal | undefined> {
  if (row.state === "live") return liveRefusal(projection, row.version, false);
  const described = await admin.describeGroup(row.groupId);
  const active = groupActiveMessage(
    row.groupId,
    described.state,
    described.members,
    `drop version ${row.version}`,
  );
  return active === undefined ? undefined : { kind: "refused", reason: "GROUP_ACTIVE", message: active };
}

/** Options of {@link dropVersion} and its dry run. */
export interface DropOptions {
  /**
   * Also an MD5 of each table's rows (tableChecksums.ts: reads and sorts every row, slow on a large
   * table) in the dry run and the audit row; default false: each table's row count only.
   */
  readonly checksums?: boolean | undefined;
}

/**
 * Each table of `schema`, schema-qualified, with its row count, and with `checksums` its MD5 too
 * (for the drop's audit row and its dry run).
 */
export async function droppedTables(
  db: pg.Pool | pg.ClientBase,
  schema: string,
  checksums: boolean,
): Promise<(TableRowCount | TableChecksum)[]> {
  const tables = await schemaTables(db, schema);
  if (checksums)
    return tableChecksums(
      db,
      tables.map((t) => `${schema}.${t}`),
    );
  return (await tableRowCounts(db, schema, tables)).map((t) => ({ ...t, table: `${schema}.${t.table}` }));
}

/**
 * Drops version `version` of `projection`: its group in Kafka, then its state in PostgreSQL.
 * Running it again after a crash between the two finishes the job.
 * @throws ReplayableError CONFIG_INVALID for a version that does not exist or was dropped already;
 *   the KafkaJS error when the group cannot be deleted for another reason than members or absence
 *   (e.g. a missing Delete ACL on the group): nothing changed in PostgreSQL then.
 */
export async function dropVersion(
  admin: ClusterAdmin,
  pool: pg.Pool,
  projection: Projection<unknown>,
  version: number,
  options: DropOptions = {},
): Promise<DropOutcome> {
  const { row } = await resolveVersion(pool, projection, version);
  const refusal = await droppableRefusal(admin, projection.name, row);
  if (refusal !== undefined) return refusal;
  const key = versionKey(projection.name, version);
  const locked = await withExclusiveProjectionLock(pool, key, async (client) => {
    const now = (await selectVersions(client, projection.name)).find((r) => r.version === version);
    if (now?.state === "live") return liveRefusal(projection.name, version, true);
    const groupOffsets = await admin.groupCommittedOffsets(row.groupId);
    const deletion = await admin.deleteGroup(row.groupId);
    if (deletion === "has-members")
      return {
        kind: "refused" as const,
        reason: "GROUP_ACTIVE" as const,
        message: `group ${row.groupId} has members again (the coordinator refused to delete it): stop every \`replayable run --version ${version}\`, then run drop-version again; nothing changed`,
      };
    await failpoint("drop-version-group-deleted");
    return dropInDatabase(client, projection.name, row, { deletion, groupOffsets }, options);
  });
  if (locked.locked) return locked.value;
  return { kind: "refused", reason: "PROJECTION_LOCKED", message: projectionLockedMessage(key, "drop it") };
}

/** The database step: one transaction, re-checking the version is still not live. */
async function dropInDatabase(
  client: pg.ClientBase,
  projection: string,
  row: VersionRow,
  kafka: { deletion: GroupDeletion; groupOffsets: readonly CommittedOffset[] },
  options: DropOptions,
): Promise<DropOutcome> {
  const { version } = row;
  const key = versionKey(projection, version);
  return withTransaction(client, async () => {
    const rows = await selectVersions(client, projection, true);
    if (rows.find((r) => r.version === version)?.state === "live")
      return liveRefusal(projection, version, true);
    const lastCheckpoints = await readCheckpoints(client, key);
    const checksums = await droppedTables(client, row.schemaName, options.checksums === true);
    await dropVersionSchema(client, row.schemaName, versionMigrationsTable(projection, version));
    const deleted = await deleteDedupeState(client, key);
    await setVersionState(client, projection, version, "dropped");
    const group = { groupId: row.groupId, deletion: kafka.deletion };
    const auditId = await insertVersionAudit(client, {
      projection,
      action: "drop",
      version,
      ...operator(),
      forced: false,
      offsets: {
        checkpoints: lastCheckpoints,
        group: { ...group, committedOffsets: kafka.groupOffsets },
        deleted,
      },
      checksums,
    });
    return {
      kind: "dropped" as const,
      version,
      schema: row.schemaName,
      auditId,
      deleted,
      group,
      lastCheckpoints,
    };
  });
}
