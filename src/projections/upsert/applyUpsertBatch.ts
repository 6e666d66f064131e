/**
 * The upsert sink's set-based apply: a batch of operations in offset order becomes a few
 * statements that leave the table exactly as applying the records one by one would.
 *
 * Ordering within a batch: records of different keys touch different rows, so only the order of
 * each key's own records matters. The batch is cut into rounds: round n holds the n-th record of
 * every key. Each round has at most one record per key, so its deletes (one `DELETE … USING
 * unnest`) and its writes (one `INSERT … SELECT FROM unnest … ON CONFLICT`) cannot touch one row
 * twice; the rounds run in order, so each key's records apply in offset order: the last record of
 * a key wins, and a delete then an upsert of one key ends with the row present. A batch whose keys
 * are distinct takes one round: at most two statements.
 *
 * No record is skipped because a later one supersedes it: every row goes through PostgreSQL's
 * casts and constraints, so a record PostgreSQL rejects fails the statement, and the engine applies
 * the batch one record at a time instead, dead-lettering exactly that record (src/projection.ts).
 * Keys are compared as texts, which key types make exact (fieldTypes.ts KEY_TYPES).
 */
import type pg from "pg";
import type { UpsertOperation } from "./upsertOperation.js";
import type { UpsertStatements } from "./upsertStatements.js";

/** One round: at most one operation per key, deletes and writes apart. */
export interface UpsertRound {
  readonly deletes: readonly UpsertOperation[];
  readonly writes: readonly UpsertOperation[];
}

/**
 * Cuts `operations` (offset order) into rounds: the n-th operation of each key goes to round n.
 * Keys are told apart by their text without trailing white space: PostgreSQL stores a text longer than
 * a `varchar(n)` column whose excess is spaces cut to n characters (PostgreSQL "Character Types"),
 * so "abc " and "abc" can name one row, and a tombstone of one must not run before a write of the
 * other (each round runs its deletes first). Keys that differ only there merely take more rounds
 * (`trimEnd` removes more than spaces, which costs nothing but rounds; it is linear, a regular
 * expression anchored at the end is not).
 * Without key columns (insert mode) every operation is a write of its own row: one round.
 */
export function planUpsertRounds(operations: readonly UpsertOperation[]): UpsertRound[] {
  const rounds: { deletes: UpsertOperation[]; writes: UpsertOperation[] }[] = [];
  const seen = new Map<string, number>();
  for (const op of operations) {
    let round = 0;
    if (op.key.length > 0) {
      const id = JSON.stringify(op.key.map((part) => part.trimEnd()));
      round = seen.get(id) ?? 0;
      seen.set(id, round + 1);
    }
    const target = (rounds[round] ??= { deletes: [], writes: [] });
    (op.kind === "delete" ? target.deletes : target.writes).push(op);
  }
  return rounds;
}

/**
 * Applies `operations` (offset order) with the sink's statements, round by round.
 * @throws the database error of a statement (a data or constraint error makes the engine fall back
 *   to one record at a time, which dead-letters the record at fault).
 */
export async function applyUpsertOperations(
  client: pg.ClientBase,
  statements: UpsertStatements,
  operations: readonly UpsertOperation[],
): Promise<void> {
  for (const round of planUpsertRounds(operations)) {
    if (round.deletes.length > 0) {
      if (statements.delete === undefined) throw new Error("upsert sink: a delete without a key");
      await client.query({ ...statements.delete, values: columnsOf(round.deletes.map((op) => op.key)) });
    }
    if (round.writes.length > 0) {
      const rows = round.writes.map((op) => [...op.key, ...(op.kind === "write" ? op.values : [])]);
      await client.query({ ...statements.write, values: columnsOf(rows) });
    }
  }
}

/** Transposes rows into one array per column, the parameters `unnest` reads. */
function columnsOf(rows: readonly (readonly (string | null)[])[]): (string | null)[][] {
  const width = rows[0]?.length ?? 0;
  const columns: (string | null)[][] = Array.from({ length: width }, () => []);
  for (const row of rows) for (let i = 0; i < width; i++) columns[i]!.push(row[i] ?? null);
  return columns;
}
