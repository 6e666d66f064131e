/** Producing ledger streams and reading the ledger back, for integration tests. */
import type pg from "pg";
import { produceRecords } from "../../src/kafka/producer.js";
import { ledgerChecksum, readLedgerState } from "../../src/projections/ledger/checksum.js";
import { generateLedgerStream, type LedgerStream } from "../../src/projections/ledger/generate.js";
import { drizzleOf } from "../../src/db/pool.js";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { testKafka } from "./stack.js";

/** Creates `topic` with `partitions` partitions and produces a seeded ledger stream to it. */
export async function produceLedger(
  admin: ClusterAdmin,
  topic: string,
  options: { count: number; duplicateRate?: number; seed?: number; partitions?: number; idPrefix?: string },
): Promise<LedgerStream> {
  await admin.createTopic(topic, options.partitions ?? 3);
  const stream = generateLedgerStream({
    count: options.count,
    duplicateRate: options.duplicateRate ?? 0,
    seed: options.seed ?? 1,
    idPrefix: options.idPrefix,
  });
  await produceRecords(testKafka(), topic, stream.records);
  return stream;
}

/** The checksum of the ledger tables in `pool`'s database. */
export async function ledgerChecksumOf(pool: pg.Pool): Promise<string> {
  return ledgerChecksum(await readLedgerState(drizzleOf(pool)));
}

/** Number of event ids recorded for `projection`. */
export async function eventIdCount(pool: pg.Pool, projection = "ledger"): Promise<number> {
  const r = await pool.query<{ n: string }>(
    "SELECT count(*) AS n FROM replayable.processed_events WHERE projection = $1",
    [projection],
  );
  return Number(r.rows[0]!.n);
}
