/**
 * Scenarios `batch`, `batch-offset`, `replay` and `per-record`: one replayable member ({@link ConsumerService}) applying the ledger, timed
 * through its onBatchCommitted hook (one event per transaction or per batch skipped on the fast path).
 */
import type { Logger } from "pino";
import { loadConfig } from "../../src/config.js";
import { ConsumerService } from "../../src/engine/consumerService.js";
import type { Projection } from "../../src/projection.js";
import type { ScenarioSpec } from "../scenario.js";
import type { Tally } from "../tally.js";

/**
 * Runs a member of `spec.group` until `tally` is done, then stops it gracefully.
 * REPLAYABLE_* variables in the environment (batch size, pool size, ...) apply as in `replayable run`;
 * the benchmark sets none of them except the partitions consumed concurrently, so the member runs at
 * its default settings unless the caller's environment says otherwise.
 * @throws the service's fatal error when it stopped on one.
 */
export async function runReplayable(
  spec: ScenarioSpec,
  projection: Projection<unknown>,
  tally: Tally,
  log: Logger,
): Promise<void> {
  const config = loadConfig(process.env, {
    KAFKA_BROKERS: spec.brokers.join(","),
    DATABASE_URL: spec.databaseUrl,
    REPLAYABLE_TOPICS: spec.topic,
    REPLAYABLE_GROUP_ID: spec.group,
    REPLAYABLE_PARTITIONS_CONCURRENTLY: String(spec.partitionsConsumedConcurrently),
    ...(spec.client === undefined ? {} : { KAFKA_CLIENT: spec.client }),
  });
  const service = new ConsumerService({
    config,
    projection,
    log,
    http: false,
    onAssignment: () => tally.joined(),
    onBatchCommitted: (event) => {
      const endedAt = performance.now();
      tally.add({
        partition: event.partition,
        lastOffset: event.lastOffset,
        records: event.records,
        startedAt: endedAt - event.durationMs,
        endedAt,
        applied: event.applied,
        duplicates: event.duplicates.offset + event.duplicates.event_id,
        deadLettered: event.deadLettered,
        fastPath: event.fastPath,
        transactionMs: event.transactionMs,
      });
    },
  });
  await service.start();
  const outcome = await Promise.race([tally.done.then(() => undefined), service.done]);
  await service.stop();
  if (outcome?.kind === "failed") throw outcome.error;
  const final = await service.done;
  if (final.kind === "failed") throw final.error;
}
