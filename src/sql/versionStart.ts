/**
 * When and where a blue/green version started (docs/replay.md "Progress"): its registry
 * `created_at`, the database's clock now, and the offsets its group was set to, from its `create`
 * audit row (`offsets.partitions[].to`, written by `rebuild --blue-green`).
 */
import type pg from "pg";

/** A partition's offset the version started from. The offset is a decimal string. */
export interface VersionStartOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** {@link readVersionStart}'s answer; times are ms since the epoch, on PostgreSQL's clock. */
export interface VersionStart {
  readonly createdAtMs: number;
  readonly nowMs: number;
  /** Empty for version 1 (made by `migrate`, its group started wherever it had no offsets). */
  readonly offsets: readonly VersionStartOffset[];
}

/** Reads version `version` of `projection`'s start; undefined when it is not registered. */
export async function readVersionStart(
  db: pg.Pool | pg.ClientBase,
  projection: string,
  version: number,
): Promise<VersionStart | undefined> {
  const result = await db.query<{ created_ms: string; now_ms: string; offsets: unknown }>(
    `SELECT (extract(epoch FROM v.created_at) * 1000)::bigint::text AS created_ms,
            (extract(epoch FROM now()) * 1000)::bigint::text AS now_ms,
            (SELECT a.offsets FROM replayable.projection_version_audit a
              WHERE a.projection = v.projection AND a.version = v.version AND a.action = 'create'
              ORDER BY a.id DESC LIMIT 1) AS offsets
       FROM replayable.projection_versions v
      WHERE v.projection = $1 AND v.version = $2`,
    [projection, version],
  );
  const row = result.rows[0];
  if (row === undefined) return undefined;
  return {
    createdAtMs: Number(row.created_ms),
    nowMs: Number(row.now_ms),
    offsets: startOffsets(row.offsets),
  };
}

/** The `partitions[].to` of an audit row's `offsets` jsonb; entries of another shape are skipped. */
function startOffsets(offsets: unknown): VersionStartOffset[] {
  const partitions = (offsets as { partitions?: unknown } | null)?.partitions;
  if (!Array.isArray(partitions)) return [];
  return partitions.flatMap((p: unknown) => {
    const { topic, partition, to } = (p ?? {}) as { topic?: unknown; partition?: unknown; to?: unknown };
    return typeof topic === "string" && typeof partition === "number" && typeof to === "string"
      ? [{ topic, partition, offset: to }]
      : [];
  });
}
