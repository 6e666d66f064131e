/**
 * What every Kafka client adapter's security options share (src/kafka/kafkajsSecurity.ts for
 * KafkaJS, src/kafka/platformatic/platformaticSecurity.ts for @platformatic/kafka): Node's TLS
 * options and the OAUTHBEARER token provider, from the configured {@link KafkaSecurity}.
 */
import type { ConnectionOptions } from "node:tls";
import { ReplayableError } from "../errors.js";
import type { KafkaSecurity, OauthBearerProvider } from "./securityConfig.js";

/**
 * Node's `tls.connect` options for `security`, or undefined without TLS. The broker's certificate
 * chain is verified against KAFKA_SSL_CA_LOCATION (else Node's bundled roots) and its host name,
 * unless turned off.
 */
export function nodeTlsOptions(security: KafkaSecurity): ConnectionOptions | undefined {
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

/**
 * The OAUTHBEARER token provider to use: `override` (a library user's own), else the config file's.
 * @throws ReplayableError CONFIG_INVALID when there is neither.
 */
export function oauthBearerProviderOf(
  security: KafkaSecurity,
  override: OauthBearerProvider | undefined,
): OauthBearerProvider {
  const provider = override ?? security.oauthBearerProvider;
  if (provider === undefined) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      "invalid configuration:\n  KAFKA_SASL_MECHANISM=OAUTHBEARER: needs a token provider: export kafkaOauthBearerProvider from the config file (or pass oauthBearerProvider to ConsumerService); see docs/security.md",
    );
  }
  return provider;
}
