/**
 * Kafka connection security as configured (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_*),
 * named after Kafka's own client settings (`security.protocol`, `sasl.mechanism`,
 * `ssl.ca.location`... in librdkafka). Plain data, checked and read once at start-up by
 * config.ts; src/kafka/kafkajsSecurity.ts turns it into KafkaJS's `ssl` and `sasl` options.
 */

/** Kafka's `security.protocol` values. */
export const SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
/** One of {@link SECURITY_PROTOCOLS}. */
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

/** Kafka's `sasl.mechanism` values replayable supports (KafkaJS has no GSSAPI). */
export const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] as const;
/** One of {@link SASL_MECHANISMS}. */
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/**
 * An OAUTHBEARER token, as KafkaJS's `oauthBearerProvider` returns it: `value` is the compact
 * JWS (or any token the broker's callback handler accepts, e.g. AWS MSK IAM's signed URL).
 */
export interface OauthBearerToken {
  readonly value: string;
}

/**
 * Returns a fresh OAUTHBEARER token; called by KafkaJS on every (re)authentication of a
 * connection. Pass one with {@link KafkaSecurity.oauthBearerProvider} (the config file's
 * `kafkaOauthBearerProvider`) or `ConsumerServiceOptions.oauthBearerProvider`.
 */
export type OauthBearerProvider = () => Promise<OauthBearerToken>;

/** SASL credentials (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD). */
export interface SaslSettings {
  readonly mechanism: SaslMechanism;
  /** For PLAIN and SCRAM; undefined for OAUTHBEARER. */
  readonly username: string | undefined;
  /** For PLAIN and SCRAM; a registered secret (secrets.ts). */
  readonly password: string | undefined;
}

/** A PEM file read at start-up: where it was and what it held. */
export interface PemFile {
  /** The path as configured (named in errors). */
  readonly location: string;
  /** The file's text. */
  readonly pem: string;
}

/** TLS settings (KAFKA_SSL_*, KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION). */
export interface SslSettings {
  /** CA certificates to trust instead of Node's bundled roots; undefined: the bundled roots. */
  readonly ca: PemFile | undefined;
  /** Client certificate for mutual TLS (with {@link key}). */
  readonly certificate: PemFile | undefined;
  /** The client certificate's subject as node:crypto gives it (`CN=alice`, one RDN a line). */
  readonly certificateSubject: string | undefined;
  /** Client private key for mutual TLS; its text is a registered secret. */
  readonly key: PemFile | undefined;
  /** Passphrase of an encrypted {@link key}; a registered secret. */
  readonly keyPassword: string | undefined;
  /** Verify the broker's certificate chain (default true; false is warned about at start-up). */
  readonly verifyCertificate: boolean;
  /** Check the broker's host name against its certificate (`ssl.endpoint.identification.algorithm=https`). */
  readonly verifyHostname: boolean;
}

/** How every Kafka client of the process connects. */
export interface KafkaSecurity {
  readonly protocol: SecurityProtocol;
  /** Set for SASL_PLAINTEXT and SASL_SSL. */
  readonly sasl: SaslSettings | undefined;
  /** Set for SSL and SASL_SSL. */
  readonly ssl: SslSettings | undefined;
  /** The OAUTHBEARER token provider (config file `kafkaOauthBearerProvider`), if given. */
  readonly oauthBearerProvider?: OauthBearerProvider | undefined;
}

/** No TLS, no SASL: Kafka's default `security.protocol=PLAINTEXT`. */
export const PLAINTEXT: KafkaSecurity = Object.freeze({
  protocol: "PLAINTEXT",
  sasl: undefined,
  ssl: undefined,
});

/**
 * The Kafka principal a broker sees for `security`, as `kafka-acls --allow-principal` takes it:
 * `User:<username>` for PLAIN and SCRAM, `User:<subject DN>` for a client certificate (Kafka's
 * default `ssl.principal.mapping.rules`: the RFC 2253 distinguished name), `User:ANONYMOUS` for
 * PLAINTEXT and server-only TLS; undefined when unknown here (OAUTHBEARER: the token's subject).
 */
export function kafkaPrincipal(security: KafkaSecurity): string | undefined {
  if (security.sasl !== undefined) {
    return security.sasl.mechanism === "OAUTHBEARER" ? undefined : `User:${security.sasl.username ?? ""}`;
  }
  const subject = security.ssl?.certificateSubject;
  if (security.ssl?.certificate !== undefined) {
    // Node's X509Certificate.subject lists the RDNs one per line, most significant first; RFC 2253
    // writes them the other way round, comma-separated.
    return subject === undefined
      ? undefined
      : `User:${subject.split("\n").filter(Boolean).reverse().join(",")}`;
  }
  return "User:ANONYMOUS";
}
