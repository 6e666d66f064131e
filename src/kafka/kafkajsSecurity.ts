/**
 * The one place that turns the configured {@link KafkaSecurity} into KafkaJS's `ssl` and `sasl`
 * client options; every client the product creates gets them through createKafka (client.ts).
 */
import type { ConnectionOptions } from "node:tls";
import type { SASLOptions } from "kafkajs";
import { ReplayableError } from "../errors.js";
import type { KafkaSecurity, OauthBearerProvider } from "./securityConfig.js";

/** KafkaJS's `ssl` and `sasl` client options. */
export interface KafkaJsSecurity {
  readonly ssl: ConnectionOptions | undefined;
  readonly sasl: SASLOptions | undefined;
}

/**
 * KafkaJS's `ssl` and `sasl` for `security`. TLS verifies the broker's certificate chain against
 * KAFKA_SSL_CA_LOCATION (else Node's bundled roots) and its host name, unless turned off.
 * @param oauthBearerProvider overrides the config file's provider (a library user's own).
 * @throws ReplayableError CONFIG_INVALID when KAFKA_SASL_MECHANISM=OAUTHBEARER has no provider.
 */
export function kafkaJsSecurity(
  security: KafkaSecurity,
  oauthBearerProvider?: OauthBearerProvider,
): KafkaJsSecurity {
  return { ssl: sslOptions(security), sasl: saslOptions(security, oauthBearerProvider) };
}

function sslOptions(security: KafkaSecurity): ConnectionOptions | undefined {
  const ssl = security.ssl;
  if (ssl === undefined) return undefined;
  return {
    ...(ssl.ca === undefined ? {} : { ca: [ssl.ca.pem] }),
    ...(ssl.certificate === undefined ? {} : { cert: ssl.certificate.pem }),
    ...(ssl.key === undefined ? {} : { key: ssl.key.pem }),
    ...(ssl.keyPassword === undefined ? {} : { passphrase: ssl.keyPassword }),
    rejectUnauthorized: ssl.verifyCertificate,
    ...(ssl.verifyHostname ? {} : { checkServerIdentity: () => undefined }),
  };
}

function saslOptions(
  security: KafkaSecurity,
  override: OauthBearerProvider | undefined,
): SASLOptions | undefined {
  const sasl = security.sasl;
  if (sasl === undefined) return undefined;
  if (sasl.mechanism === "OAUTHBEARER") {
    const provider = override ?? security.oauthBearerProvider;
    if (provider === undefined) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        "invalid configuration:\n  KAFKA_SASL_MECHANISM=OAUTHBEARER: needs a token provider: export kafkaOauthBearerProvider from the config file (or pass oauthBearerProvider to ConsumerService); see docs/security.md",
      );
    }
    return {
      mechanism: "oauthbearer",
      oauthBearerProvider: async () => ({ value: (await provider()).value }),
    };
  }
  const username = sasl.username ?? "";
  const password = sasl.password ?? "";
  switch (sasl.mechanism) {
    case "PLAIN":
      return { mechanism: "plain", username, password };
    case "SCRAM-SHA-256":
      return { mechanism: "scram-sha-256", username, password };
    case "SCRAM-SHA-512":
      return { mechanism: "scram-sha-512", username, password };
  }
}
