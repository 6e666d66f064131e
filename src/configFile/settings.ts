/**
 * The settings a config file may hold, each named after its environment variable in camelCase
 * without the `REPLAYABLE_` prefix (`REPLAYABLE_DB_POOL_SIZE` → `dbPoolSize`, `KAFKA_BROKERS` →
 * `kafkaBrokers`). The README's "Configuration" table lists them.
 */
import type { ConfigVariable } from "../config.js";
import type { OauthBearerProvider } from "../kafka/securityConfig.js";

/** Each config-file setting and the environment variable it stands for. */
export const SETTING_VARIABLES = {
  kafkaBrokers: "KAFKA_BROKERS",
  kafkaClientId: "KAFKA_CLIENT_ID",
  kafkaClient: "KAFKA_CLIENT",
  kafkaGroupProtocol: "KAFKA_GROUP_PROTOCOL",
  kafkaSecurityProtocol: "KAFKA_SECURITY_PROTOCOL",
  kafkaSaslMechanism: "KAFKA_SASL_MECHANISM",
  kafkaSaslUsername: "KAFKA_SASL_USERNAME",
  kafkaSaslPassword: "KAFKA_SASL_PASSWORD",
  kafkaSslCaLocation: "KAFKA_SSL_CA_LOCATION",
  kafkaSslCertificateLocation: "KAFKA_SSL_CERTIFICATE_LOCATION",
  kafkaSslKeyLocation: "KAFKA_SSL_KEY_LOCATION",
  kafkaSslKeyPassword: "KAFKA_SSL_KEY_PASSWORD",
  kafkaEnableSslCertificateVerification: "KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION",
  kafkaSslEndpointIdentificationAlgorithm: "KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM",
  databaseUrl: "DATABASE_URL",
  projection: "REPLAYABLE_PROJECTION",
  topics: "REPLAYABLE_TOPICS",
  groupId: "REPLAYABLE_GROUP_ID",
  partitionsConcurrently: "REPLAYABLE_PARTITIONS_CONCURRENTLY",
  prefetch: "REPLAYABLE_PREFETCH",
  memoryBudgetBytes: "REPLAYABLE_MEMORY_BUDGET_BYTES",
  maxBatchRecords: "REPLAYABLE_MAX_BATCH_RECORDS",
  maxBatchBytes: "REPLAYABLE_MAX_BATCH_BYTES",
  maxRecordBytes: "REPLAYABLE_MAX_RECORD_BYTES",
  maxRecordHeaders: "REPLAYABLE_MAX_RECORD_HEADERS",
  sessionTimeoutMs: "REPLAYABLE_SESSION_TIMEOUT_MS",
  heartbeatIntervalMs: "REPLAYABLE_HEARTBEAT_INTERVAL_MS",
  shutdownTimeoutMs: "REPLAYABLE_SHUTDOWN_TIMEOUT_MS",
  retryInitialMs: "REPLAYABLE_RETRY_INITIAL_MS",
  retryMaxMs: "REPLAYABLE_RETRY_MAX_MS",
  dbPoolSize: "REPLAYABLE_DB_POOL_SIZE",
  dbQueryTimeoutMs: "REPLAYABLE_DB_QUERY_TIMEOUT_MS",
  dbIdleInTransactionTimeoutMs: "REPLAYABLE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS",
  dbKeepaliveMs: "REPLAYABLE_DB_KEEPALIVE_MS",
  dbLockCheckIntervalMs: "REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS",
  metricsHost: "REPLAYABLE_METRICS_HOST",
  metricsPort: "REPLAYABLE_METRICS_PORT",
  metricsWebConfigFile: "REPLAYABLE_METRICS_WEB_CONFIG_FILE",
  progressIntervalMs: "REPLAYABLE_PROGRESS_INTERVAL_MS",
  lagRefreshMs: "REPLAYABLE_LAG_REFRESH_MS",
  stallTimeoutMs: "REPLAYABLE_STALL_TIMEOUT_MS",
  dlqTopic: "REPLAYABLE_DLQ_TOPIC",
  logLevel: "LOG_LEVEL",
  logFormat: "LOG_FORMAT",
} as const satisfies Record<string, ConfigVariable>;

/** A setting's name in the config file. */
export type SettingName = keyof typeof SETTING_VARIABLES;

/**
 * Settings in a config file: the same values as the environment variables take, as a string, a
 * number, a boolean, or (for lists such as `kafkaBrokers` and `topics`) an array of strings.
 * Environment variables override them, and flags override both.
 */
export type ConfigFileSettings = {
  readonly [K in SettingName]?: string | number | boolean | readonly string[];
} & {
  /**
   * The OAUTHBEARER token provider, for KAFKA_SASL_MECHANISM=OAUTHBEARER (e.g. AWS MSK IAM through
   * aws-msk-iam-sasl-signer-js, or a token from your identity provider); see docs/security.md.
   */
  readonly kafkaOauthBearerProvider?: OauthBearerProvider;
};

/** The config-file setting that holds a function, not a value of a variable. */
export const OAUTH_BEARER_PROVIDER_SETTING = "kafkaOauthBearerProvider";

/**
 * The value of a setting as its environment variable would hold it: arrays joined with commas.
 * Undefined for a value of another type (an object, a function), which the caller reports.
 */
export function settingText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join(",");
  return undefined;
}
