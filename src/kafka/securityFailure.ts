/**
 * Kafka failures that no retry fixes, turned into errors naming what to set: a refused SASL login,
 * a TLS handshake that fails (unknown CA, expired certificate, a client certificate required or
 * refused, TLS against a plaintext listener) and a missing ACL (Kafka's *_AUTHORIZATION_FAILED).
 * The words are Kafka's and Node's own (error types and OpenSSL codes), quoted in each message.
 */
import { ReplayableError, errorMessage } from "../errors.js";
import type { KafkaSecurity } from "./securityConfig.js";
import { kafkaPrincipal } from "./securityConfig.js";

/** What the failing client was doing, for the messages. */
export interface FailureContext {
  readonly security: KafkaSecurity;
  readonly brokers: readonly string[];
  /** The consumer group the command works on, if any. */
  readonly groupId?: string | undefined;
  /**
   * The operation the command needs on its group (`Read` for a member, `Describe` for status,
   * `Delete` for drop-version).
   */
  readonly groupOperation?: "Read" | "Describe" | "Delete";
  /** The topics the command works on and the operations it needs on them (default Read). */
  readonly topics?: readonly string[];
  readonly topicOperations?: readonly TopicOperation[];
}

/** The Kafka ACL operations replayable needs on a topic (Read, Write and DescribeConfigs include Describe). */
export type TopicOperation = "Read" | "Describe" | "Write" | "DescribeConfigs";

/** Node/OpenSSL codes of a broker certificate the client cannot verify against its CAs. */
const UNTRUSTED = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
]);

/**
 * TLS alerts a broker sends when it refuses the client's certificate. Node names them after
 * OpenSSL's reason: OpenSSL 3.0 (Node 20, 22) says `sslv3 alert bad certificate`
 * (ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE), OpenSSL 3.2 and later (Node 24, 26) `ssl/tls alert bad
 * certificate` (ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE); both are matched.
 */
const CLIENT_CERTIFICATE_REFUSED =
  /^ERR_SSL_(?:(?:SSLV3|TLSV1|SSL\/TLS|SSL_TLS)_ALERT_(?:BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_EXPIRED|CERTIFICATE_UNKNOWN|ACCESS_DENIED|DECRYPT_ERROR|UNSUPPORTED_CERTIFICATE))$/;

/** Kafka's authorization error types and the resource each one is about. */
const AUTHORIZATION_FAILED: Readonly<Record<string, string>> = {
  TOPIC_AUTHORIZATION_FAILED: "topic",
  GROUP_AUTHORIZATION_FAILED: "group",
  CLUSTER_AUTHORIZATION_FAILED: "cluster",
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "transactional-id",
  DELEGATION_TOKEN_AUTHORIZATION_FAILED: "delegation-token",
};

/**
 * The error to report for `error` when it is an authentication, TLS or authorization failure;
 * undefined for anything else (an unreachable broker, a timeout: those may pass).
 * @returns ReplayableError KAFKA_AUTHENTICATION (login or TLS) or KAFKA_AUTHORIZATION (an ACL).
 */
export function kafkaSecurityFailure(error: unknown, context: FailureContext): ReplayableError | undefined {
  const chain = causes(error);
  const sasl = chain.find(
    (e) => nameOf(e) === "KafkaJSSASLAuthenticationError" || codeOf(e) === "PLT_KFK_AUTHENTICATION",
  );
  if (sasl !== undefined) return authentication(saslMessage(errorMessage(sasl), context), error);
  const code = chain.map(codeOf).find((c) => c !== undefined);
  const tls = code === undefined ? undefined : tlsMessage(code, context);
  if (tls !== undefined) return authentication(tls, error);
  const type = chain.map(typeOf).find((t) => t !== undefined && t in AUTHORIZATION_FAILED);
  if (type !== undefined) return authorization(type, context, error);
  return undefined;
}

function authentication(message: string, cause: unknown): ReplayableError {
  return new ReplayableError("KAFKA_AUTHENTICATION", message, { cause });
}

function saslMessage(kafkaMessage: string, context: FailureContext): string {
  const sasl = context.security.sasl;
  const who =
    sasl === undefined
      ? ""
      : sasl.mechanism === "OAUTHBEARER"
        ? " with the OAUTHBEARER token"
        : ` of KAFKA_SASL_USERNAME=${sasl.username ?? ""} (${sasl.mechanism})`;
  return `Kafka refused the SASL login${who} at ${context.brokers.join(",")}: ${kafkaMessage}. Check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD (or KAFKA_SASL_PASSWORD_FILE), and that KAFKA_SASL_MECHANISM is one the listener enables (sasl.enabled.mechanisms) and the user has credentials for (kafka-configs --alter --entity-type users --add-config 'SCRAM-SHA-512=[password=...]')`;
}

function tlsMessage(code: string, context: FailureContext): string | undefined {
  const at = `at ${context.brokers.join(",")}`;
  if (UNTRUSTED.has(code))
    return `the broker's TLS certificate ${at} is not signed by a CA this client trusts (${code}): set KAFKA_SSL_CA_LOCATION to the cluster's CA certificate (PEM)`;
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID")
    return `the broker's TLS certificate ${at} ${code === "CERT_HAS_EXPIRED" ? "has expired" : "is not valid yet"} (${code}): the cluster's operators must renew it (or check this machine's clock)`;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID")
    return `the broker's TLS certificate ${at} does not name the host connected to (${code}): list the brokers by a name the certificate holds, or set KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM=none`;
  const noCertificate = context.security.ssl?.certificate === undefined;
  if (
    code === "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" ||
    (noCertificate && CLIENT_CERTIFICATE_REFUSED.test(code))
  )
    return `the broker ${at} requires a client certificate (${code}): set KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION (mutual TLS)`;
  if (CLIENT_CERTIFICATE_REFUSED.test(code))
    return `the broker ${at} refused the client certificate of KAFKA_SSL_CERTIFICATE_LOCATION (${code}): it must be valid and signed by a CA in the broker's ssl.truststore`;
  if (code === "ERR_SSL_WRONG_VERSION_NUMBER" || code === "ERR_SSL_PACKET_LENGTH_TOO_LONG")
    return plaintextListener(context);
  return undefined;
}

/** The message for a TLS client talking to a plaintext listener. */
export function plaintextListener(context: FailureContext): string {
  return `the listener at ${context.brokers.join(",")} does not speak TLS, but KAFKA_SECURITY_PROTOCOL=${context.security.protocol}: set KAFKA_SECURITY_PROTOCOL=${context.security.sasl ? "SASL_PLAINTEXT" : "PLAINTEXT"}, or list the cluster's TLS listener in KAFKA_BROKERS`;
}

/**
 * The message for a plaintext client talking to a TLS listener: SSL or SASL_SSL, as the listener
 * asks (src/kafka/saslProbe.ts).
 * @param mechanisms the SASL mechanisms the listener enables (`[]`: it asks for no SASL login);
 *   undefined when that could not be learnt: then both protocols are named.
 */
export function tlsListener(context: FailureContext, mechanisms?: readonly string[]): string {
  const at = `the listener at ${context.brokers.join(",")} speaks TLS, but KAFKA_SECURITY_PROTOCOL=${context.security.protocol}`;
  const ca = "KAFKA_SSL_CA_LOCATION unless its CA is a public one";
  const sasl = context.security.sasl;
  if (mechanisms === undefined)
    return sasl
      ? `${at}: set KAFKA_SECURITY_PROTOCOL=SASL_SSL (with ${ca})`
      : `${at}: set KAFKA_SECURITY_PROTOCOL=SSL (with ${ca}), or SASL_SSL if the listener also asks for a SASL login (then KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD too)`;
  if (mechanisms.length === 0)
    return `${at}: set KAFKA_SECURITY_PROTOCOL=SSL (with ${ca})${sasl ? "; the listener asks for no SASL login, so remove KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD" : ""}`;
  const enabled = mechanisms.join(", ");
  if (sasl === undefined)
    return `${at}: the listener needs TLS and a SASL login both: set KAFKA_SECURITY_PROTOCOL=SASL_SSL (not SSL), KAFKA_SASL_MECHANISM to one it enables (${enabled}), KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD, and ${ca}`;
  const other = mechanisms.includes(sasl.mechanism)
    ? ""
    : `; it does not enable KAFKA_SASL_MECHANISM=${sasl.mechanism}: use one of ${enabled}`;
  return `${at}: set KAFKA_SECURITY_PROTOCOL=SASL_SSL (the listener needs TLS and a SASL login both; it enables ${enabled}), with ${ca}${other}`;
}

/**
 * The error for a topic operation missing from the principal's authorized operations (Metadata
 * v8, KIP-430): the same words and kafka-acls command as for Kafka's TOPIC_AUTHORIZATION_FAILED,
 * found before any request is refused.
 */
export function missingTopicOperation(
  topic: string,
  operation: TopicOperation,
  context: FailureContext,
): ReplayableError {
  return authorization(
    "TOPIC_AUTHORIZATION_FAILED",
    { ...context, topics: [topic], topicOperations: [operation] },
    undefined,
    "not among the principal's authorized operations of the topic, KIP-430",
  );
}

/**
 * The ACL a refused request needs, as `kafka-acls` adds it: Kafka refused `type` (e.g.
 * GROUP_AUTHORIZATION_FAILED) for the context's group, topics or the cluster. `reason` replaces
 * the error type in the message when no request was refused yet.
 */
function authorization(
  type: string,
  context: FailureContext,
  cause: unknown,
  reason?: string,
): ReplayableError {
  const resource = AUTHORIZATION_FAILED[type]!;
  const principal = kafkaPrincipal(context.security) ?? "User:<the client's principal>";
  const bootstrap = context.brokers[0] ?? "<broker>";
  let operations: readonly string[] = ["Describe"];
  let names: readonly string[] = [];
  if (resource === "group" && context.groupId !== undefined) {
    operations = [context.groupOperation ?? "Read"];
    names = [context.groupId];
  } else if (resource === "topic") {
    operations = context.topicOperations ?? ["Read"];
    names = context.topics ?? [];
  } else if (resource === "transactional-id") operations = ["Write"];
  const operation = operations.join(" and ");
  const flags = operations.map((o) => `--operation ${o}`).join(" ");
  const what =
    resource === "cluster"
      ? "the cluster"
      : `${resource} ${names.map((n) => `'${n}'`).join(", ") || "(unknown)"}`;
  const selector = resource === "cluster" ? "--cluster" : `--${resource} ${names[0] ?? "<name>"}`;
  const note =
    resource === "topic" && reason === undefined
      ? " (Kafka answers the same when a topic does not exist and the principal may not Describe it)"
      : "";
  return new ReplayableError(
    "KAFKA_AUTHORIZATION",
    `Kafka refused ${operation} on ${what} (${reason ?? type}) for ${principal}${note}: grant ${operations.length > 1 ? "them" : "it"} with kafka-acls --bootstrap-server ${bootstrap} --add --allow-principal ${principal} ${flags} ${selector}; docs/security.md lists the ACLs each command needs`,
    { cause, context: { type, principal, operation, resource, names } },
  );
}

/**
 * `error` and what caused it: KafkaJS's `cause`/`originalError` chain, and the `errors` of an
 * AggregateError (@platformatic/kafka's MultipleErrors and ResponseError hold one ProtocolError per
 * failed part of a response). At most 20 errors, each once.
 */
function causes(error: unknown): object[] {
  const chain: object[] = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && chain.length < 20) {
    const e = queue.shift();
    if (typeof e !== "object" || e === null || chain.includes(e)) continue;
    chain.push(e);
    const { cause, originalError, errors } = e as {
      cause?: unknown;
      originalError?: unknown;
      errors?: unknown;
    };
    queue.push(cause ?? originalError);
    if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
  }
  return chain;
}

function nameOf(e: object): string | undefined {
  const name = (e as { name?: unknown }).name;
  return typeof name === "string" ? name : undefined;
}

function codeOf(e: object): string | undefined {
  const code = (e as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/** Kafka's error type: KafkaJS's `type`, or @platformatic/kafka's `apiId` (both Kafka's own names). */
function typeOf(e: object): string | undefined {
  const { type, apiId } = e as { type?: unknown; apiId?: unknown };
  if (typeof type === "string") return type;
  return typeof apiId === "string" ? apiId : undefined;
}
