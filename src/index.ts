/**
 * replayable: apply Kafka records to PostgreSQL effectively once.
 * The library's public API, the stable surface only: the config file's `defineConfig` and
 * `defineProjection`, the service that runs a projection, its types and its errors; and the parts
 * of the shipped github projection, to extend it in a changed version (its decode, its counts, its
 * definition: examples/github-new-column/). The ledger example and the internal helpers are not
 * part of it. See README.md for the guarantees and their limits, docs/projections.md for writing a
 * projection.
 */
export { defineConfig, type ProjectionEntry, type ReplayableConfig } from "./configFile/defineConfig.js";
export type { ConfigFileSettings } from "./configFile/settings.js";
export type { ProjectionDeclaration } from "./configFile/projectionFromDeclaration.js";
export { defineProjection, type ProjectionDefinition } from "./defineProjection.js";
export type { ApplyContext, DecodedRecord, DedupeKey, Projection } from "./projection.js";
export { headerText, type KafkaRecord } from "./record.js";
export type { Db } from "./db/pool.js";
export type { OffsetString } from "./offsets.js";
export { ERROR_CODES, PermanentRecordError, ReplayableError, type ErrorCode } from "./errors.js";
export { loadConfig, type Config, type ConfigVariable } from "./config.js";
export type {
  KafkaSecurity,
  OauthBearerProvider,
  OauthBearerToken,
  SaslMechanism,
  SecurityProtocol,
} from "./kafka/securityConfig.js";
export { migrate, type MigrateOptions, type MigratingProjection } from "./db/migrate.js";
export {
  ConsumerService,
  type BatchCommitted,
  type ConsumerServiceOptions,
  type ServiceOutcome,
} from "./engine/consumerService.js";
export {
  addGithubCounts,
  GITHUB_PROJECTION,
  githubProjection,
} from "./projections/github/githubProjection.js";
export {
  decodeGithubEventValue,
  MAX_GITHUB_NAME_LENGTH,
  PUSH_EVENT,
  type GithubEvent,
} from "./projections/github/events.js";
