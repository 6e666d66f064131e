/**
 * The switch of readers from one version to another, in one transaction (docs/design.md
 * "Blue/green versions"): the registry rows locked, the stable schema's views dropped and created
 * over the new live version's tables, the states changed and an audit row written. With
 * `lock_timeout`, so a long reader makes it fail (55P03, nothing changed) instead of queueing every
 * later reader behind its ACCESS EXCLUSIVE locks.
 */
import type pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { ReplayableError } from "../errors.js";
import {
  insertVersionAudit,
  selectVersions,
  setVersionState,
  type VersionAudit,
  type VersionState,
} from "../sql/projectionVersions.js";
import { pointViews, schemaTables, schemaViews } from "../sql/versionViews.js";
import { failpoint } from "../support/failpoints.js";
import { versionSchema } from "./versionNames.js";

/** What {@link swapVersions} switches. */
export interface Swap {
  readonly projection: string;
  /** The live version now. */
  readonly from: number;
  /** The version made live. */
  readonly to: number;
  /** The state `to` must be in (a promote's shadow, a rollback's retired). */
  readonly toState: VersionState;
  /** The state `from` goes to: `retired` after a promote, `shadow` after a rollback. */
  readonly fromBecomes: VersionState;
  /** lock_timeout of the transaction, ms (0: the server's). */
  readonly lockTimeoutMs: number;
  readonly audit: Omit<VersionAudit, "projection" | "version" | "fromVersion">;
}

/**
 * Switches the stable schema's views from version `from` to `to` in one transaction.
 * @returns the audit row's id and the views now pointing at `to`.
 * @throws ReplayableError DATABASE (exit 1) when the versions changed meanwhile (another
 *   promote or rollback ran); the PostgreSQL error 55P03 when a reader held a view past the
 *   lock timeout (nothing changed).
 */
export async function swapVersions(
  client: pg.ClientBase,
  swap: Swap,
): Promise<{ auditId: string; views: string[] }> {
  const { projection, from, to } = swap;
  return withTransaction(
    client,
    async () => {
      const rows = await selectVersions(client, projection, true);
      const live = rows.find((r) => r.state === "live");
      const target = rows.find((r) => r.version === to);
      if (live?.version !== from || target?.state !== swap.toState)
        throw new ReplayableError("DATABASE", versionsChangedMessage(swap, live?.version, target?.state), {
          context: { projection, from, to },
        });
      const fromSchema = versionSchema(projection, from);
      const toSchema = versionSchema(projection, to);
      const ours = new Set([
        ...(await schemaTables(client, fromSchema)),
        ...(await schemaTables(client, toSchema)),
      ]);
      const drop = (await schemaViews(client, projection)).filter((v) => ours.has(v));
      const views = await pointViews(client, projection, toSchema, drop);
      await setVersionState(client, projection, from, swap.fromBecomes);
      await setVersionState(client, projection, to, "live");
      const auditId = await insertVersionAudit(client, {
        ...swap.audit,
        projection,
        version: to,
        fromVersion: from,
      });
      await failpoint("promote-before-commit");
      return { auditId, views };
    },
    { lockTimeoutMs: swap.lockTimeoutMs },
  );
}

/**
 * Why a switch found the versions other than it read them before: another promote, rollback or
 * drop-version changed them in between (they serialize on the registry rows, so the later one sees
 * the first one's result). Says what this command was to do, what the versions are now, and that
 * nothing changed.
 * @param live the version live now (undefined: none); `target` the state of `swap.to` now (undefined: no row).
 */
export function versionsChangedMessage(
  swap: Pick<Swap, "projection" | "from" | "to" | "toState"> & {
    readonly audit: Pick<VersionAudit, "action">;
  },
  live: number | undefined,
  target: VersionState | undefined,
): string {
  const { projection, from, to } = swap;
  const command = swap.audit.action;
  const was = `version ${to} (${swap.toState})`;
  const now = [
    live === undefined ? "no version is live" : `version ${live} is live`,
    ...(live === to ? [] : [`version ${to} is ${target === undefined ? "gone" : target}`]),
  ].join(" and ");
  return `${command} refused, nothing changed: another promote, rollback or drop-version of ${projection} ran while this ${command} was checking. This ${command} was to make ${was} live in place of version ${from}; now ${now}. Look at the versions with \`replayable status --projection ${projection}\`, then run \`replayable ${command}\` again if it is still wanted.`;
}
