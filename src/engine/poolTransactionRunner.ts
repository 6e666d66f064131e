/**
 * The {@link TransactionRunner} of a running member: each transaction on a connection of the pool,
 * through {@link applyBatch} (docs/design.md "The transaction", steps 1-7).
 */
import type pg from "pg";
import type { Projection } from "../projection.js";
import type { Tracing } from "../tracing/tracing.js";
import { applyBatch } from "./applyBatch.js";
import type { TransactionRunner } from "./partitionWorker.js";

/** Options of {@link poolTransactionRunner}. */
export interface PoolTransactionRunnerOptions {
  readonly pool: pg.Pool;
  readonly projection: Projection<unknown>;
  /** REPLAYABLE_LOCK_TIMEOUT_MS; 0: the server's setting. */
  readonly lockTimeoutMs: number;
  /** REPLAYABLE_MAX_RECORD_BYTES: larger records are dead-lettered. */
  readonly maxRecordBytes: number;
  /** REPLAYABLE_MAX_RECORD_HEADERS: records with more headers are dead-lettered; default 1000. */
  readonly maxRecordHeaders?: number;
  /**
   * When tracing is on: each transaction is a span, its queries child spans (src/tracing/); the
   * consumer group names the span's `messaging.consumer.group.name`.
   */
  readonly tracing?: { readonly tracing: Tracing; readonly groupId: string } | undefined;
}

/**
 * Runs each transaction on a pooled connection. A connection whose transaction failed is
 * discarded (a failed ROLLBACK would leave it inside the transaction); its duration is BEGIN to
 * COMMIT, the wait for a connection left out.
 */
export function poolTransactionRunner(options: PoolTransactionRunnerOptions): TransactionRunner {
  const { pool, projection, lockTimeoutMs, maxRecordBytes, maxRecordHeaders, tracing } = options;
  return async (request) => {
    let client: pg.PoolClient | undefined;
    try {
      client = await pool.connect();
      // The failing query rejects too; this only keeps the "error" event from crashing the process.
      client.on("error", ignoreClientError);
      const started = process.hrtime.bigint();
      const apply = (transactionClient: pg.PoolClient) =>
        applyBatch({
          client: transactionClient,
          projection,
          lockTimeoutMs,
          maxRecordBytes,
          maxRecordHeaders,
          ...request,
        });
      const result =
        tracing === undefined
          ? await apply(client)
          : await tracing.tracing.transaction(
              {
                topic: request.topic,
                partition: request.partition,
                groupId: tracing.groupId,
                projection: projection.name,
                records: request.records,
                throughOffset: request.throughOffset,
              },
              client,
              apply,
            );
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      client.removeListener("error", ignoreClientError);
      client.release();
      client = undefined;
      return { result, durationMs };
    } catch (error) {
      client?.removeListener("error", ignoreClientError);
      client?.release(true);
      throw error;
    }
  };
}

/** Listener for the "error" event of a checked-out client while a query of ours runs on it. */
function ignoreClientError(): void {}
