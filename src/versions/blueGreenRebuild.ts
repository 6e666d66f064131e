/**
 * `rebuild --blue-green`: the next version of a versioned projection, computed from the log beside
 * the live one (docs/design.md "Blue/green versions"). With `execute`: the version's schema and
 * migrations, then its new group's committed offsets at the log start offsets (Kafka), then its
 * registry row (`shadow`) and an audit row in one transaction. Its member (the CLI goes on as it
 * unless `--no-run`, else a `run --version N+1`) then consumes into it while the live version keeps
 * consuming and serving. Refused like `rebuild` when history is gone or a topic is compacted
 * (src/replay/rebuild.ts `historyRefusal`), unless forced.
 */
import type pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { ReplayableError } from "../errors.js";
import type { KafkaAdmin } from "../kafka/admin.js";
import type { Logger } from "../logger.js";
import { advisoryLock, advisoryUnlock, MIGRATION_LOCK } from "../sql/advisoryLocks.js";
import { insertVersion, insertVersionAudit, selectVersions } from "../sql/projectionVersions.js";
import { groupActiveMessage } from "../replay/groupActivity.js";
import { auditOffsets, historyRefusal, planRebuild, type RebuildPlan } from "../replay/rebuild.js";
import { commitPlan } from "../replay/replay.js";
import type { RegisteredProjection } from "../projections/registry.js";
import { createVersionSchema } from "./createVersion.js";
import { operator } from "./operator.js";
import { resolveVersion } from "./resolveVersion.js";
import { versionGroup, versionSchema } from "./versionNames.js";

/** Inputs of {@link blueGreenRebuild}. */
export interface BlueGreenOptions {
  readonly admin: KafkaAdmin;
  readonly pool: pg.Pool;
  readonly projection: RegisteredProjection;
  /** The group id the new version's group is named after (`<groupId>-v<N>`). */
  readonly groupId: string;
  /** The projection's topics; empty: the live version's checkpointed topics, else its defaults. */
  readonly topics: readonly string[];
  readonly execute: boolean;
  readonly force: boolean;
  readonly log: Logger;
}

/** What a blue/green rebuild does, or would do. */
export interface BlueGreenPlan {
  readonly projection: string;
  readonly liveVersion: number;
  readonly version: number;
  readonly schema: string;
  readonly groupId: string;
  /** The new group's partitions: from the log start offset (`newOffset`) to the high watermark. */
  readonly rebuild: RebuildPlan;
  readonly refusal?: { readonly reason: string; readonly message: string };
}

/** How it ended; a refusal changes nothing. */
export type BlueGreenOutcome =
  | { readonly kind: "dry-run"; readonly plan: BlueGreenPlan }
  | { readonly kind: "executed"; readonly plan: BlueGreenPlan; readonly auditId: string }
  | { readonly kind: "refused"; readonly reason: string; readonly message: string };

/**
 * Plans version N+1 of `projection` and, with `execute`, creates it.
 * @throws ReplayableError CONFIG_INVALID when the projection is not versioned or has no live
 *   version; DATABASE when a migration fails; KAFKA when committing the new group's offsets fails
 *   (the schema stays, unregistered: running the command again finishes it).
 */
export async function blueGreenRebuild(options: BlueGreenOptions): Promise<BlueGreenOutcome> {
  const { projection, pool } = options;
  if (projection.versioned !== true)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `--blue-green: projection ${projection.name} is not versioned; defineProjection({ versioned: true }) opts in (docs/replay.md), or rebuild it in place without --blue-green`,
    );
  const plan = await planBlueGreen(options);
  if (!options.execute) return { kind: "dry-run", plan };
  if (plan.refusal !== undefined) return { kind: "refused", ...plan.refusal };
  const client = await pool.connect();
  try {
    await advisoryLock(client, MIGRATION_LOCK);
    try {
      await createVersionSchema(client, projection.name, plan.version, projection.migrationsFolder);
    } finally {
      await advisoryUnlock(client, MIGRATION_LOCK);
    }
    await commitPlan(options.admin, plan.groupId, plan.rebuild.partitions, options.log);
    const auditId = await withTransaction(client, async () => {
      await insertVersion(client, {
        projection: projection.name,
        version: plan.version,
        schemaName: plan.schema,
        groupId: plan.groupId,
        state: "shadow",
      });
      return insertVersionAudit(client, {
        projection: projection.name,
        action: "create",
        version: plan.version,
        fromVersion: plan.liveVersion,
        ...operator(),
        forced: options.force,
        offsets: auditOffsets(plan.rebuild),
      });
    });
    return { kind: "executed", plan, auditId };
  } finally {
    client.release();
  }
}

/** Reads what the blue/green rebuild would create; changes nothing. */
async function planBlueGreen(options: BlueGreenOptions): Promise<BlueGreenPlan> {
  const { projection, pool } = options;
  const live = await resolveVersion(pool, projection);
  const versions = await selectVersions(pool, projection.name);
  const version = Math.max(...versions.map((v) => v.version)) + 1;
  const groupId = versionGroup(options.groupId, version);
  // The live version's checkpointed topics, with the new group's (none) committed offsets.
  const rebuild = await planRebuild(
    {
      admin: options.admin,
      projection: live.instance,
      groupId,
      topics: options.topics,
      force: options.force,
    },
    pool,
  );
  const active = groupActiveMessage(groupId, rebuild.groupState, rebuild.members, `create ${groupId}`);
  const refusal =
    active !== undefined
      ? { reason: "GROUP_ACTIVE", message: active }
      : historyRefusal(rebuild, options.force);
  return {
    projection: projection.name,
    liveVersion: live.row.version,
    version,
    schema: versionSchema(projection.name, version),
    groupId,
    rebuild,
    ...(refusal === undefined ? {} : { refusal }),
  };
}
