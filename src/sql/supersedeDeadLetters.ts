/**
 * Rebuild's dead letters (docs/design.md "Dead letters and rebuilds"): the unresolved dead letters
 * of the records a rebuild hands back to the consumer (offset at or past the partition's new
 * offset) are resolved as `superseded`, in the transaction that empties the projection.
 */
import type pg from "pg";

/** Where a rebuild makes the consumer start reading one partition again. */
export interface HandedBack {
  readonly topic: string;
  readonly partition: number;
  /** The partition's new committed offset (its log start offset), as a decimal string. */
  readonly fromOffset: string;
}

/** The partitions handed back, as a FROM item `r`. */
const HANDED_BACK = "unnest($2::text[], $3::integer[], $4::bigint[]) AS r(topic, partition, from_offset)";
/** The letters of `d` (dead_letters) to resolve. */
const MATCHING = `d.projection = $1 AND d.resolved_at IS NULL
       AND d.topic = r.topic AND d.partition = r.partition AND d."offset" >= r.from_offset`;

function params(projection: string, partitions: readonly HandedBack[]): unknown[] {
  return [
    projection,
    partitions.map((p) => p.topic),
    partitions.map((p) => p.partition),
    partitions.map((p) => p.fromOffset),
  ];
}

/** Unresolved dead letters of `projection` at or past `fromOffset` of the given partitions (a decimal string). */
export async function countDeadLettersHandedBack(
  client: pg.Pool | pg.ClientBase,
  projection: string,
  partitions: readonly HandedBack[],
): Promise<string> {
  const result = await client.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM replayable.dead_letters AS d, ${HANDED_BACK} WHERE ${MATCHING}`,
    params(projection, partitions),
  );
  return result.rows[0]!.n;
}

/**
 * Inside the rebuild's transaction: resolves those dead letters as `superseded` by `resolvedBy`
 * (no attempt is counted: nothing was tried). Uses dead_letters_source_idx.
 * @returns how many (a decimal string).
 */
export async function supersedeDeadLetters(
  client: pg.ClientBase,
  projection: string,
  partitions: readonly HandedBack[],
  resolvedBy: string,
): Promise<string> {
  const result = await client.query(
    `UPDATE replayable.dead_letters AS d
     SET resolved_at = now(), resolution = 'superseded', resolved_by = $5
     FROM ${HANDED_BACK} WHERE ${MATCHING}`,
    [...params(projection, partitions), resolvedBy],
  );
  return String(result.rowCount ?? 0);
}
