/**
 * The one place that turns the configured {@link KafkaSecurity} into KafkaJS's `ssl` and `sasl`
 * client options; every client the product creates gets them through createKafka (client.ts).
 */
import type { ConnectionOptions } from "node:tls";
import type { SASLOptions } from "kafkajs";
import { nodeTlsOptions, oauthBearerProviderOf } from "./clientSecurity.js";
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
  return { ssl: nodeTlsOptions(security), sasl: saslOptions(security, oauthBearerProvider) };
}

function saslOptions(
  security: KafkaSecurity,
  override: OauthBearerProvider | undefined,
): SASLOptions | undefined {
  const sasl = security.sasl;
  if (sasl === undefined) return undefined;
  if (sasl.mechanism === "OAUTHBEARER") {
    const provider = oauthBearerProviderOf(security, override);
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
