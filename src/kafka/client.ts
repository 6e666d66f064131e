/** The KafkaJS client, with its log lines routed into our pino logger. The only folder that imports kafkajs. */
import { createRequire } from "node:module";
import { Kafka, logLevel, type LogEntry } from "kafkajs";
import type { Logger } from "pino";
import type { KafkaSecurity, OauthBearerProvider } from "./securityConfig.js";
import { kafkaJsSecurity } from "./kafkajsSecurity.js";

/**
 * The Kafka error types the group coordinator answers while a group rebalances (Kafka protocol
 * error codes 27, 22, 25): Heartbeat, OffsetCommit and SyncGroup get them whenever a member joins
 * or leaves, and KafkaJS rejoins the group on each. Expected, so not errors in our logs.
 */
export const REBALANCE_ERROR_TYPES = [
  "REBALANCE_IN_PROGRESS",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
] as const;

/**
 * The messages of {@link REBALANCE_ERROR_TYPES} as KafkaJS words them. KafkaJS's Connection logs a
 * failed response at error level with only the error's message (`{ error: e.message }`, no type), so
 * the types are matched through KafkaJS's own table of protocol errors (`src/protocol/error.js`,
 * `errorCodes`), not through text copied here.
 * @returns type → message, for each type the table has.
 */
export function rebalanceErrorMessages(): ReadonlyMap<string, string> {
  const require = createRequire(import.meta.url);
  const { errorCodes } = require("kafkajs/src/protocol/error.js") as {
    errorCodes: readonly { type: string; message: string }[];
  };
  const types: readonly string[] = REBALANCE_ERROR_TYPES;
  return new Map(errorCodes.filter((e) => types.includes(e.type)).map((e) => [e.type, e.message]));
}

const REBALANCE_MESSAGES: ReadonlySet<string> = new Set(rebalanceErrorMessages().values());

/**
 * True for a KafkaJS log line that reports a rebalance response: KafkaJS's Connection logging a
 * failed response (`Response Heartbeat(…)`, `Response OffsetCommit(…)`) whose error is one of
 * {@link REBALANCE_ERROR_TYPES}. Logged at debug instead of error.
 */
export function isRebalanceResponse(namespace: string, extra: Readonly<Record<string, unknown>>): boolean {
  return namespace === "Connection" && typeof extra.error === "string" && REBALANCE_MESSAGES.has(extra.error);
}

/**
 * The Kafka error types that mean "ask again, elsewhere or a moment later" (protocol error codes
 * 5, 6, 14, 15, 16): a leader or group coordinator moving or still loading, as right after a
 * topic is created or a broker restarts. KafkaJS refreshes its metadata and retries the request
 * on each, and logs every attempt at error level; a request that still fails after its retries
 * fails the caller, which reports it. So the attempts are not errors in our logs.
 */
export const RETRIED_ERROR_TYPES = [
  "LEADER_NOT_AVAILABLE",
  "NOT_LEADER_FOR_PARTITION",
  "GROUP_LOAD_IN_PROGRESS",
  "GROUP_COORDINATOR_NOT_AVAILABLE",
  "NOT_COORDINATOR_FOR_GROUP",
] as const;

const RETRIED_MESSAGES: ReadonlySet<string> = new Set(
  (
    createRequire(import.meta.url)("kafkajs/src/protocol/error.js") as {
      errorCodes: readonly { type: string; message: string }[];
    }
  ).errorCodes
    .filter((e) => (RETRIED_ERROR_TYPES as readonly string[]).includes(e.type))
    .map((e) => e.message),
);

/**
 * True for a KafkaJS log line that reports one attempt of a request KafkaJS retries
 * ({@link RETRIED_ERROR_TYPES}): its Connection logging the failed response, or its producer's
 * `Failed to send messages: …` with a `retryCount`. Logged at debug instead of error.
 */
export function isRetriedResponse(
  namespace: string,
  message: string,
  extra: Readonly<Record<string, unknown>>,
): boolean {
  if (namespace === "Connection") return typeof extra.error === "string" && RETRIED_MESSAGES.has(extra.error);
  const prefix = "Failed to send messages: ";
  return (
    namespace === "Producer" &&
    typeof extra.retryCount === "number" &&
    message.startsWith(prefix) &&
    RETRIED_MESSAGES.has(message.slice(prefix.length))
  );
}

/** Options for {@link createKafka}. */
export interface KafkaClientOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly log: Logger;
  /** Connection timeout in ms; default 3000. */
  readonly connectionTimeoutMs?: number;
  /** TLS and SASL (the config's `kafka.security`); default PLAINTEXT. */
  readonly security?: KafkaSecurity;
  /** OAUTHBEARER token provider, overriding the security's own (a library user's). */
  readonly oauthBearerProvider?: OauthBearerProvider;
  /** Retries of a failed request or connection (KafkaJS `retry.retries`); default KafkaJS's 5. */
  readonly retries?: number;
}

/**
 * Creates a KafkaJS client whose log lines go to `log` as `component: "kafkajs"` with KafkaJS's
 * namespace and context (broker, groupId, topic...) kept. KafkaJS's own level follows `log.level`
 * (debug and trace turn its debug lines on), so LOG_LEVEL governs both. A rebalance response
 * ({@link isRebalanceResponse}) or an attempt of a request KafkaJS retries ({@link isRetriedResponse})
 * that KafkaJS logs at error level goes to debug: an ordinary rebalance, leader move or new topic
 * logs no error-level line. TLS and SASL come from `security` ({@link kafkaJsSecurity});
 * with certificate verification turned off, a warning is logged for every client created.
 * @throws ReplayableError CONFIG_INVALID when OAUTHBEARER has no token provider.
 */
export function createKafka(options: KafkaClientOptions): Kafka {
  const kafkaLog = options.log.child({ component: "kafkajs" });
  const bound = kafkaLog.bindings();
  const { ssl, sasl } = options.security
    ? kafkaJsSecurity(options.security, options.oauthBearerProvider)
    : { ssl: undefined, sasl: undefined };
  if (options.security?.ssl?.verifyCertificate === false) {
    options.log.warn(
      { setting: "KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION" },
      "TLS certificate verification is OFF: the Kafka connection is encrypted but anyone in the path can impersonate the broker; set KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION=true and KAFKA_SSL_CA_LOCATION",
    );
  }
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    ...(ssl === undefined ? {} : { ssl }),
    ...(sasl === undefined ? {} : { sasl }),
    ...(options.retries === undefined ? {} : { retry: { retries: options.retries } }),
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    logLevel: kafkaLogLevel(options.log.level),
    logCreator:
      () =>
      ({ namespace, level, log }: LogEntry) => {
        const { message, timestamp: _t, logger: _l, ...extra } = log;
        // Keys the logger already binds with the same value (groupId...) are not repeated.
        const fields: Record<string, unknown> = { namespace };
        for (const [key, value] of Object.entries(extra)) if (bound[key] !== value) fields[key] = value;
        if (
          level === logLevel.ERROR &&
          !isRebalanceResponse(namespace, extra) &&
          !isRetriedResponse(namespace, message, extra)
        )
          kafkaLog.error(fields, message);
        else if (level === logLevel.WARN) kafkaLog.warn(fields, message);
        else if (level === logLevel.INFO) kafkaLog.info(fields, message);
        else kafkaLog.debug(fields, message);
      },
  });
}

/** The KafkaJS level matching a pino level (KafkaJS has no trace or fatal). */
function kafkaLogLevel(level: string): logLevel {
  switch (level) {
    case "trace":
    case "debug":
      return logLevel.DEBUG;
    case "info":
      return logLevel.INFO;
    case "warn":
      return logLevel.WARN;
    case "silent":
      return logLevel.NOTHING;
    default:
      return logLevel.ERROR;
  }
}
