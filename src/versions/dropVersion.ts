/**
 * `drop-version`: removes a version's schema (its tables), migrations table and dedupe state
 * (checkpoints, event ids, dead letters under `<name>@v<N>`), and marks it `dropped` (the number
 * is never reused), with an audit row, in one transaction (docs/design.md "Blue/green versions").
 * Refused for the live version, while a `run` of the version holds its advisory lock, and while its
 * consumer group has members.
 */
import type pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import type { KafkaAdmin } from "../kafka/admin.js";
import type { Projection } from "../projection.js";
import { withExclusiveProjectionLock, projectionLockedMessage } from "../replay/exclusiveLock.js";
import { groupActiveMessage } from "../replay/groupActivity.js";
import { insertVersionAudit, selectVersions, setVersionState } from "../sql/projectionVersions.js";
import { deleteDedupeState, dropVersionSchema } from "../sql/versionViews.js";
import { versionMigrationsTable } from "./createVersion.js";
import { operator } from "./operator.js";
import { resolveVersion } from "./resolveVersion.js";
import { versionKey } from "./versionNames.js";

/** How a drop-version ended. */
export type DropOutcome =
  | {
      readonly kind: "dropped";
      readonly version: number;
      readonly schema: string;
      readonly auditId: string;
      readonly deleted: { checkpoints: string; eventIds: string; deadLetters: string };
    }
  | {
      readonly kind: "refused";
      readonly reason: "LIVE_VERSION" | "PROJECTION_LOCKED" | "GROUP_ACTIVE";
      readonly message: string;
    };

/**
 * Drops version `version` of `projection`.
 * @throws ReplayableError CONFIG_INVALID for a version that does not exist or was dropped already.
 */
export async function dropVersion(
  admin: KafkaAdmin,
  pool: pg.Pool,
  projection: Projection<unknown>,
  version: number,
): Promise<DropOutcome> {
  const { row } = await resolveVersion(pool, projection, version);
  if (row.state === "live")
    return {
      kind: "refused",
      reason: "LIVE_VERSION",
      message: `version ${version} is the live version of ${projection.name}: readers use it. Promote another version (or roll back) first.`,
    };
  const group = await admin.describeGroup(row.groupId);
  const active = groupActiveMessage(row.groupId, group.state, group.members, `drop version ${version}`);
  if (active !== undefined) return { kind: "refused", reason: "GROUP_ACTIVE", message: active };
  const key = versionKey(projection.name, version);
  const locked = await withExclusiveProjectionLock(pool, key, (client) =>
    withTransaction(client, async () => {
      const rows = await selectVersions(client, projection.name, true);
      if (rows.find((r) => r.version === version)?.state === "live")
        return {
          kind: "refused" as const,
          reason: "LIVE_VERSION" as const,
          message: `version ${version} of ${projection.name} became live meanwhile; nothing dropped`,
        };
      await dropVersionSchema(client, row.schemaName, versionMigrationsTable(projection.name, version));
      const deleted = await deleteDedupeState(client, key);
      await setVersionState(client, projection.name, version, "dropped");
      const auditId = await insertVersionAudit(client, {
        projection: projection.name,
        action: "drop",
        version,
        ...operator(),
        forced: false,
        offsets: { deleted },
      });
      return { kind: "dropped" as const, version, schema: row.schemaName, auditId, deleted };
    }),
  );
  if (locked.locked) return locked.value;
  return { kind: "refused", reason: "PROJECTION_LOCKED", message: projectionLockedMessage(key, "drop it") };
}
