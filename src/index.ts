/**
 * replayable: apply Kafka records to PostgreSQL effectively once.
 * The library's public API; see README.md for the guarantees and their limits.
 */
export { loadConfig, redactUrl, type Config, type ConfigVariable } from "./config.js";
export {
  ERROR_CODES,
  PermanentRecordError,
  ReplayableError,
  classifyPgError,
  type ErrorCode,
} from "./errors.js";
export { compareOffsets, nextOffset, offsetDistance, parseOffset, type OffsetString } from "./offsets.js";
export type { KafkaRecord } from "./record.js";
export { headerText } from "./record.js";
export type { ApplyContext, DecodedRecord, DedupeKey, Projection } from "./projection.js";
export {
  ConsumerService,
  type BatchCommitted,
  type ConsumerServiceOptions,
  type ServiceOutcome,
} from "./engine/consumerService.js";
export { applyBatch, type BatchResult, type DeadLettered } from "./engine/applyBatch.js";
export { createMetrics, type Metrics } from "./metrics/metrics.js";
export { startHttpServer } from "./metrics/server.js";
export { createPool, drizzleOf, type Db } from "./db/pool.js";
export { migrate } from "./db/migrate.js";
export { createLogger } from "./logger.js";
export { ledgerProjection } from "./projections/ledger/ledgerProjection.js";
