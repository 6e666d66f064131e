/**
 * Comparing two versions' tables (src/sql/tableChecksums.ts) in one REPEATABLE READ snapshot, at
 * equal checkpoints: each version's transaction commits its effect with its checkpoint, so in one
 * snapshot two versions that have applied the same offsets of every partition can be compared
 * row for row, however busy their members are.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import { readCheckpoints, type CheckpointRow } from "../sql/readCheckpoints.js";
import { partitionKey, type PartitionKey } from "../topicPartition.js";
import { tableChecksums, type TableChecksum } from "../sql/tableChecksums.js";
import { schemaTables } from "../sql/versionViews.js";

/** One side of a comparison: a version's dedupe key and schema. */
export interface VersionSide {
  readonly key: string;
  readonly schema: string;
}

/** One table of the comparison; a side is null when its schema has no such table. */
export interface TableComparison {
  readonly table: string;
  readonly live: TableChecksum | null;
  readonly candidate: TableChecksum | null;
  readonly equal: boolean;
}

/** The comparison, with whether the two versions were at the same checkpoints in its snapshot. */
export interface VersionComparison {
  readonly samePositions: boolean;
  readonly tables: readonly TableComparison[];
  readonly liveCheckpoints: readonly CheckpointRow[];
  readonly candidateCheckpoints: readonly CheckpointRow[];
}

/**
 * Compares `live` and `candidate`, polling every 200 ms for up to `waitMs` until a snapshot finds
 * them at the same checkpoints on every partition ({@link samePositions}); returns the last
 * comparison either way.
 * @param logStarts the log start offset of each partition of their topics, where known.
 */
export async function compareVersions(
  pool: pg.Pool,
  live: VersionSide,
  candidate: VersionSide,
  waitMs: number,
  logStarts: ReadonlyMap<PartitionKey, string>,
): Promise<VersionComparison> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const comparison = await compareOnce(pool, live, candidate, logStarts);
    if (comparison.samePositions || Date.now() >= deadline) return comparison;
    await sleep(200);
  }
}

/**
 * True when two versions' checkpoints stand at the same place on every partition either has one
 * on. A partition's place is its checkpoint, raised to the log start offset when that is higher
 * (the records below were deleted: neither version reads them again); a partition without a
 * checkpoint is at its log start offset, when known. So a version that never saw records deleted
 * before it was built is at the same place as one that applied them, and waiting changes nothing.
 */
export function samePositions(
  live: readonly CheckpointRow[],
  candidate: readonly CheckpointRow[],
  logStarts: ReadonlyMap<PartitionKey, string>,
): boolean {
  const places = (rows: readonly CheckpointRow[]) =>
    new Map(rows.map((r) => [partitionKey(r.topic, r.partition), r.nextOffset]));
  const a = places(live);
  const b = places(candidate);
  const place = (rows: Map<PartitionKey, string>, key: PartitionKey): bigint | undefined => {
    const start = logStarts.get(key);
    const checkpoint = rows.get(key);
    if (checkpoint === undefined) return start === undefined ? undefined : BigInt(start);
    return start !== undefined && BigInt(start) > BigInt(checkpoint) ? BigInt(start) : BigInt(checkpoint);
  };
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const x = place(a, key);
    const y = place(b, key);
    if (x === undefined || y === undefined || x !== y) return false;
  }
  return true;
}

async function compareOnce(
  pool: pg.Pool,
  live: VersionSide,
  candidate: VersionSide,
  logStarts: ReadonlyMap<PartitionKey, string>,
): Promise<VersionComparison> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    try {
      const liveCheckpoints = await readCheckpoints(client, live.key);
      const candidateCheckpoints = await readCheckpoints(client, candidate.key);
      const tables = await compareTables(client, live.schema, candidate.schema);
      return {
        samePositions: samePositions(liveCheckpoints, candidateCheckpoints, logStarts),
        tables,
        liveCheckpoints,
        candidateCheckpoints,
      };
    } finally {
      await client.query("COMMIT");
    }
  } finally {
    client.release();
  }
}

async function compareTables(
  client: pg.ClientBase,
  liveSchema: string,
  candidateSchema: string,
): Promise<TableComparison[]> {
  const liveTables = await schemaTables(client, liveSchema);
  const candidateTables = await schemaTables(client, candidateSchema);
  const names = [...new Set([...liveTables, ...candidateTables])].sort();
  const sum = async (schema: string, present: readonly string[], table: string) =>
    present.includes(table) ? ((await tableChecksums(client, [`${schema}.${table}`]))[0] ?? null) : null;
  const out: TableComparison[] = [];
  for (const table of names) {
    const l = await sum(liveSchema, liveTables, table);
    const c = await sum(candidateSchema, candidateTables, table);
    const equal = l !== null && c !== null && l.rows === c.rows && l.md5 === c.md5;
    out.push({ table, live: l, candidate: c, equal });
  }
  return out;
}
