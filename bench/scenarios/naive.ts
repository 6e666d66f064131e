/**
 * Scenario `naive`, the seed's naive shape: KafkaJS eachMessage and one PostgreSQL transaction per record,
 * `INSERT INTO replayable.processed_events … ON CONFLICT DO NOTHING`, then (when the id was new) the
 * ledger's per-record effect (the balance upsert, or the order's upsert/update). Same schema, same
 * effect code, no checkpoint; offsets auto-committed by KafkaJS.
 */
import type { Logger } from "pino";
import { createPool, drizzleOf } from "../../src/db/pool.js";
import { valueDigest } from "../../src/engine/dedupeKeys.js";
import { loadConfig } from "../../src/config.js";
import { createKafka } from "../../src/kafka/client.js";
import { toRecord } from "../../src/kafka/toRecord.js";
import { decodeLedgerEvent } from "../../src/projections/ledger/events.js";
import { ledgerPerRecordProjection } from "../../src/projections/ledger/ledgerProjection.js";
import { headerText } from "../../src/record.js";
import type { ScenarioSpec } from "../scenario.js";
import type { Tally } from "../tally.js";

/** Consumes until `tally` is done (usually a record limit), one transaction per record. */
export async function runNaive(spec: ScenarioSpec, tally: Tally, log: Logger): Promise<void> {
  const pool = createPool({
    connectionString: spec.databaseUrl,
    max: 10,
    applicationName: "replayable-bench-naive",
  });
  const kafka = createKafka({
    brokers: spec.brokers,
    clientId: "replayable-bench-naive",
    log,
    security: loadConfig(process.env).kafka.security,
  });
  const consumer = kafka.consumer({
    groupId: spec.group,
    sessionTimeout: 30_000,
    rebalanceTimeout: 60_000,
    heartbeatInterval: 3000,
    maxBytesPerPartition: spec.maxBytesPerPartition,
    allowAutoTopicCreation: false,
  });
  const projection = ledgerPerRecordProjection;
  consumer.on(consumer.events.GROUP_JOIN, () => tally.joined());
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [spec.topic], fromBeginning: true });
    await consumer.run({
      partitionsConsumedConcurrently: spec.partitionsConsumedConcurrently,
      eachMessage: async ({ topic, partition, message }) => {
        const startedAt = performance.now();
        const record = toRecord(topic, partition, message);
        const eventId = headerText(record, "ce_id") ?? "";
        const client = await pool.connect();
        let applied = 0;
        try {
          await client.query("BEGIN");
          const inserted = await client.query(
            `INSERT INTO replayable.processed_events (projection, event_id, topic, partition, "offset", value_sha256)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
            [projection.name, eventId, topic, partition, record.offset, hexToBytes(valueDigest(record))],
          );
          if (inserted.rowCount === 1) {
            const ctx = { client, db: drizzleOf(client), log };
            await projection.apply(ctx, { record, value: decodeLedgerEvent(record), eventId });
            applied = 1;
          }
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK").catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
        tally.add({
          partition,
          lastOffset: record.offset,
          records: 1,
          startedAt,
          endedAt: performance.now(),
          applied,
          duplicates: 1 - applied,
        });
      },
    });
    await tally.done;
  } finally {
    await consumer.disconnect();
    await pool.end();
  }
}

/** The digest as the bytea parameter the seed's shape would send (a Buffer), or null. */
function hexToBytes(hex: string | null): Buffer | null {
  return hex === null ? null : Buffer.from(hex, "hex");
}
