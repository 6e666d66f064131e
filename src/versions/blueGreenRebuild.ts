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
import type { ClusterAdmin } from "../kafka/admin.js";
import type { Logger } from "../logger.js";
import { advisoryLock, advisoryUnlock, MIGRATION_LOCK, versionCreationLock } from "../sql/advisoryLocks.js";
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
  readonly admin: ClusterAdmin;
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
 * Refused (`VERSION_TAKEN`, nothing changed) when another `rebuild --blue-green --execute` of the
 * projection created the planned version meanwhile: creations of a projection's versions take
 * {@link versionCreationLock} and check the registry again under it.
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
  const client = await pool.connect();
  try {
    // One creation of the projection's versions at a time: a second `--execute` that planned the
    // same number waits here, then finds it registered and changes nothing.
    await advisoryLock(client, versionCreationLock(projection.name));
    try {
      const refusal = (await versionTaken(client, plan)) ?? plan.refusal;
      if (refusal !== undefined) return { kind: "refused", ...refusal };
      return await createPlanned(client, options, plan);
    } finally {
      await advisoryUnlock(client, versionCreationLock(projection.name));
    }
  } finally {
    client.release();
  }
}

/**
 * The refusal when version `plan.version` was registered after `plan` was read: another
 * `rebuild --blue-green --execute` of the projection created it meanwhile (and, unless `--no-run`,
 * goes on as its member: its group's members are that rebuild's). Undefined when it is still free.
 */
async function versionTaken(
  db: pg.Pool | pg.ClientBase,
  plan: Pick<BlueGreenPlan, "projection" | "version" | "groupId">,
): Promise<BlueGreenPlan["refusal"]> {
  const taken = (await selectVersions(db, plan.projection)).find((v) => v.version >= plan.version);
  if (taken === undefined) return undefined;
  return { reason: "VERSION_TAKEN", message: versionTakenMessage(plan, taken.version) };
}

/**
 * What the loser of two `rebuild --blue-green --execute` at once is told: another rebuild created
 * the version it planned (`taken`, the newest now), nothing changed, and what to do.
 */
export function versionTakenMessage(
  plan: Pick<BlueGreenPlan, "projection" | "version" | "groupId">,
  taken: number,
): string {
  const { projection, version } = plan;
  return `another \`rebuild --blue-green\` of projection ${projection} created version ${version} (group ${plan.groupId}) while this one was preparing it. That rebuild (or a \`run --version ${version}\`) builds it: follow it with \`replayable status --projection ${projection}\` and promote it once it has caught up. Run this command again only to create a further version (${taken + 1}).`;
}

/** Creates the planned version: its schema, its group's offsets, its registry and audit rows. */
async function createPlanned(
  client: pg.PoolClient,
  options: BlueGreenOptions,
  plan: BlueGreenPlan,
): Promise<BlueGreenOutcome> {
  const { projection } = options;
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
  // Members in the new version's group: most likely another rebuild's, which registered it meanwhile.
  const taken =
    active === undefined
      ? undefined
      : await versionTaken(pool, { projection: projection.name, version, groupId });
  const refusal =
    taken ??
    (active !== undefined
      ? { reason: "GROUP_ACTIVE", message: active }
      : historyRefusal(rebuild, options.force));
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
