/**
 * The one place that turns the configured {@link KafkaSecurity} into @platformatic/kafka's `tls`
 * and `sasl` connection options (issue 30), as src/kafka/kafkajsSecurity.ts does for KafkaJS: the
 * same settings reach the broker whichever client KAFKA_CLIENT chose.
 */
import type { ConnectionOptions as TlsOptions } from "node:tls";
import { nodeTlsOptions, oauthBearerProviderOf } from "../clientSecurity.js";
import type { KafkaSecurity, OauthBearerProvider } from "../securityConfig.js";

/** @platformatic/kafka's SASL options (its `SASLOptions`, the fields replayable sets). */
export interface PlatformaticSasl {
  readonly mechanism: "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" | "OAUTHBEARER";
  readonly username?: string;
  readonly password?: string;
  /** OAUTHBEARER: asked on every authentication of a connection. */
  readonly token?: () => Promise<string>;
}

/** @platformatic/kafka's `tls` and `sasl` connection options. */
export interface PlatformaticSecurity {
  readonly tls?: TlsOptions;
  readonly sasl?: PlatformaticSasl;
}

/**
 * The client's `tls` and `sasl` for `security`. TLS verifies the broker's certificate chain against
 * KAFKA_SSL_CA_LOCATION (else Node's bundled roots) and its host name, unless turned off.
 * @param oauthBearerProvider overrides the config file's provider (a library user's own).
 * @throws ReplayableError CONFIG_INVALID when KAFKA_SASL_MECHANISM=OAUTHBEARER has no provider.
 */
export function platformaticSecurity(
  security: KafkaSecurity,
  oauthBearerProvider?: OauthBearerProvider,
): PlatformaticSecurity {
  const tls = nodeTlsOptions(security);
  const sasl = saslOptions(security, oauthBearerProvider);
  return { ...(tls === undefined ? {} : { tls }), ...(sasl === undefined ? {} : { sasl }) };
}

function saslOptions(
  security: KafkaSecurity,
  override: OauthBearerProvider | undefined,
): PlatformaticSasl | undefined {
  const sasl = security.sasl;
  if (sasl === undefined) return undefined;
  if (sasl.mechanism === "OAUTHBEARER") {
    const provider = oauthBearerProviderOf(security, override);
    return { mechanism: "OAUTHBEARER", token: async () => (await provider()).value };
  }
  return { mechanism: sasl.mechanism, username: sasl.username ?? "", password: sasl.password ?? "" };
}
