/**
 * `promote` and `rollback` (docs/design.md "Blue/green versions"). `promote --version N` makes the
 * shadow N live, only when it has caught up (lag at most `maxLag` on every partition) and its tables
 * equal the live version's (compared at equal checkpoints in one snapshot) unless `allowDifferent`.
 * `rollback` makes the newest retired version live again; the version it replaces becomes a shadow.
 * Both switch the views in one transaction (swapVersions.ts) and write an audit row.
 */
import type pg from "pg";
import type { ClusterAdmin } from "../kafka/admin.js";
import { partitionKey } from "../topicPartition.js";
import type { Projection } from "../projection.js";
import { selectVersions } from "../sql/projectionVersions.js";
import { compareVersions, type VersionComparison } from "./compareVersions.js";
import { operator } from "./operator.js";
import { resolveVersion } from "./resolveVersion.js";
import { swapOrRefuse } from "./swapOrRefuse.js";
import { versionKey, versionSchema } from "./versionNames.js";
import { lagTopics } from "./lagTopics.js";
import { versionLag, type VersionPartitionLag } from "./versionLag.js";

/** Inputs of {@link promote}. */
export interface PromoteOptions {
  readonly admin: ClusterAdmin;
  readonly pool: pg.Pool;
  readonly projection: Projection<unknown>;
  readonly version: number;
  /**
   * Topics to measure the lag on besides those the live and the promoted version's groups consume
   * (see lagTopics: a list that misses one never narrows the check); empty: those only.
   */
  readonly topics: readonly string[];
  /** The largest lag allowed on any partition (0: caught up). */
  readonly maxLag: bigint;
  /** Promote although the tables differ from the live version's (a changed projection). */
  readonly allowDifferent: boolean;
  /** How long to wait for the two versions to reach equal checkpoints, ms. */
  readonly waitMs: number;
  /** lock_timeout of the switching transaction, ms. */
  readonly lockTimeoutMs: number;
}

/** Why a promote or rollback is refused; nothing changed. */
export type VersionRefusalReason =
  "NOT_SHADOW" | "LAGGING" | "DIFFERENT" | "POSITIONS_DIFFER" | "NO_RETIRED_VERSION" | "LOCK_TIMEOUT";

/** How a promote or rollback ended. */
export type SwapOutcome =
  | {
      readonly kind: "switched";
      readonly from: number;
      readonly to: number;
      readonly auditId: string;
      readonly views: readonly string[];
      readonly lag: readonly VersionPartitionLag[];
      readonly comparison?: VersionComparison;
    }
  | {
      readonly kind: "refused";
      readonly reason: VersionRefusalReason;
      readonly message: string;
      readonly lag?: readonly VersionPartitionLag[];
      readonly comparison?: VersionComparison;
    };

/**
 * Promotes shadow version `version` of `projection` when it is caught up and compares as asked.
 * @throws ReplayableError CONFIG_INVALID for an unknown version; DATABASE when the versions
 *   changed meanwhile. A reader holding a view past the lock timeout (55P03) is a `LOCK_TIMEOUT`
 *   refusal ({@link swapOrRefuse}).
 */
export async function promote(options: PromoteOptions): Promise<SwapOutcome> {
  const { pool, projection, version } = options;
  const live = await resolveVersion(pool, projection);
  const target = await resolveVersion(pool, projection, version);
  if (target.row.state !== "shadow")
    return {
      kind: "refused",
      reason: "NOT_SHADOW",
      message: `version ${version} of ${projection.name} is ${target.row.state}, not a shadow: only a shadow is promoted (\`rollback\` makes a retired version live again)`,
    };
  const checked = await lagTopics(
    options.admin,
    pool,
    options.topics,
    [live.row.groupId, target.row.groupId],
    target.instance.name,
  );
  const lag = await versionLag(
    options.admin,
    pool,
    target.instance,
    target.row.groupId,
    checked.topics,
    checked.label,
  );
  const topics = [...new Set(lag.map((p) => p.topic))];
  const behind = lag.filter((p) => BigInt(p.lag) > options.maxLag);
  if (behind.length > 0)
    return { kind: "refused", reason: "LAGGING", message: laggingMessage(options, behind), lag };
  const comparison = await compareWithLive(pool, projection.name, live.row.version, version, {
    waitMs: options.waitMs,
    lag,
  });
  const refusal = comparisonRefusal(options, live.row.version, comparison);
  if (refusal !== undefined) return { ...refusal, lag, comparison };
  const swap = await swapOrRefuse(pool, {
    projection: projection.name,
    from: live.row.version,
    to: version,
    toState: "shadow",
    fromBecomes: "retired",
    lockTimeoutMs: options.lockTimeoutMs,
    audit: {
      action: "promote",
      ...operator(),
      forced: options.allowDifferent && comparison.tables.some((t) => !t.equal),
      offsets: { topics, lag, live: comparison.liveCheckpoints, promoted: comparison.candidateCheckpoints },
      checksums: comparison.tables,
    },
  });
  if (swap.kind === "refused") return { ...swap, lag, comparison };
  const { auditId, views } = swap;
  return { kind: "switched", from: live.row.version, to: version, auditId, views, lag, comparison };
}

/**
 * Compares version `version` of projection `name` with the live one (`compareVersions`), the log
 * start offsets taken from `lag` (a partition whose records below them are gone is at the same
 * place in both), waiting up to `waitMs` for equal checkpoints.
 */
async function compareWithLive(
  pool: pg.Pool,
  name: string,
  liveVersion: number,
  version: number,
  options: { readonly waitMs: number; readonly lag: readonly VersionPartitionLag[] },
): Promise<VersionComparison> {
  const side = (v: number) => ({ key: versionKey(name, v), schema: versionSchema(name, v) });
  const logStarts = new Map(options.lag.map((p) => [partitionKey(p.topic, p.partition), p.logStartOffset]));
  return compareVersions(pool, side(liveVersion), side(version), options.waitMs, logStarts);
}

function laggingMessage(options: PromoteOptions, behind: readonly VersionPartitionLag[]): string {
  return [
    `version ${options.version} of ${options.projection.name} has not caught up (lag above ${options.maxLag}):`,
    ...behind.map(
      (p) =>
        `  ${p.topic}:${p.partition} checkpoint ${p.checkpoint ?? "-"}, high watermark ${p.highWatermark}: lag ${p.lag}`,
    ),
    `Keep \`replayable run --projection ${options.projection.name} --version ${options.version}\` running until its lag is 0 (or give --max-lag), then promote again.`,
  ].join("\n");
}

function comparisonRefusal(
  options: PromoteOptions,
  liveVersion: number,
  comparison: VersionComparison,
): { kind: "refused"; reason: VersionRefusalReason; message: string } | undefined {
  const differing = comparison.tables.filter((t) => !t.equal);
  if (options.allowDifferent) return undefined;
  if (!comparison.samePositions)
    return {
      kind: "refused",
      reason: "POSITIONS_DIFFER",
      message: `versions ${liveVersion} and ${options.version} of ${options.projection.name} were not at the same checkpoints within ${options.waitMs} ms, so their tables cannot be compared: let both members read to the end of the log (or stop the producers), then promote again, or give --allow-different`,
    };
  if (differing.length === 0) return undefined;
  return {
    kind: "refused",
    reason: "DIFFERENT",
    message: [
      `version ${options.version} of ${options.projection.name} differs from the live version ${liveVersion} at the same checkpoints:`,
      ...differing.map(
        (t) =>
          `  ${t.table}: live ${t.live === null ? "(no such table)" : `${t.live.rows} rows, md5 ${t.live.md5}`}; version ${options.version} ${t.candidate === null ? "(no such table)" : `${t.candidate.rows} rows, md5 ${t.candidate.md5}`}`,
      ),
      `A changed projection is expected to differ: give --allow-different to promote it anyway.`,
    ].join("\n"),
  };
}

/** Inputs of {@link rollback}. */
export interface RollbackOptions {
  readonly admin: ClusterAdmin;
  readonly pool: pg.Pool;
  readonly projection: Projection<unknown>;
  readonly lockTimeoutMs: number;
}

/**
 * Makes the newest retired version live again; the live one becomes a shadow (it can be promoted
 * again, or dropped). No lag or checksum check refuses it: the retired version is as its member
 * left it. Its audit row still records, like a promote's, both versions' checkpoints and high
 * watermarks per partition (`offsets.live`, `offsets.restored`), their checkpoints in the snapshot
 * of the checksums, and both versions' table checksums (`checksums`; `live` is the version
 * replaced, `candidate` the one restored).
 * @throws as {@link promote}.
 */
export async function rollback(options: RollbackOptions): Promise<SwapOutcome> {
  const { admin, pool, projection } = options;
  const live = await resolveVersion(pool, projection);
  const retired = (await selectVersions(pool, projection.name))
    .filter((r) => r.state === "retired")
    .sort((a, b) => b.version - a.version)[0];
  if (retired === undefined)
    return {
      kind: "refused",
      reason: "NO_RETIRED_VERSION",
      message: `projection ${projection.name} has no retired version to roll back to (the live version is ${live.row.version}; a version becomes retired when another is promoted over it)`,
    };
  const target = await resolveVersion(pool, projection, retired.version);
  const liveLag = await versionLag(admin, pool, live.instance, live.row.groupId, []);
  const lag = await versionLag(admin, pool, target.instance, target.row.groupId, []);
  const comparison = await compareWithLive(pool, projection.name, live.row.version, retired.version, {
    waitMs: 0,
    lag,
  });
  const swap = await swapOrRefuse(pool, {
    projection: projection.name,
    from: live.row.version,
    to: retired.version,
    toState: "retired",
    fromBecomes: "shadow",
    lockTimeoutMs: options.lockTimeoutMs,
    audit: {
      action: "rollback",
      ...operator(),
      forced: false,
      offsets: {
        live: liveLag,
        restored: lag,
        snapshot: { live: comparison.liveCheckpoints, restored: comparison.candidateCheckpoints },
      },
      checksums: comparison.tables,
    },
  });
  if (swap.kind === "refused") return { ...swap, lag, comparison };
  const { auditId, views } = swap;
  return { kind: "switched", from: live.row.version, to: retired.version, auditId, views, lag, comparison };
}
