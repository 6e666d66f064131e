/**
 * @platformatic/kafka (issue 30) reaches the secured broker with the settings KafkaJS takes
 * (src/kafka/platformatic/platformaticSecurity.ts): SASL_SSL with SCRAM-SHA-512, mutual TLS with a
 * client certificate, and OAUTHBEARER with a token provider, each as a principal that may only
 * Describe the test's topic; a wrong password and an untrusted CA are refused.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../src/config.js";
import type { OauthBearerProvider } from "../../src/kafka/securityConfig.js";
import { PlatformaticAdmin } from "../../src/kafka/platformatic/platformaticAdmin.js";
import { platformaticSecurity } from "../../src/kafka/platformatic/platformaticSecurity.js";
import { SASL_BROKERS, caPath, clientCertificate, grant, saslEnv, sslEnv } from "../helpers/secureKafka.js";
import { securedStack } from "../helpers/securedStack.js";
import { uniqueName } from "../helpers/stack.js";

/** Connects a PlatformaticAdmin with the environment's settings; closed when the test finishes. */
async function connect(env: Record<string, string>, oauth?: OauthBearerProvider): Promise<PlatformaticAdmin> {
  const { kafka } = loadConfig(env);
  const admin = await PlatformaticAdmin.connect(await import("@platformatic/kafka"), {
    brokers: kafka.brokers,
    clientId: "replayable-test-platformatic",
    security: platformaticSecurity(kafka.security, oauth),
  });
  onTestFinished(() => admin.close());
  return admin;
}

/** An unsecured OAUTHBEARER token (`alg: none`) for `sub`, as test/security/oauthBearer.test.ts makes. */
function unsecuredToken(sub: string): string {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  return `${b64({ alg: "none" })}.${b64({ sub, iat: now, exp: now + 3600 })}.`;
}

describe("PlatformaticAdmin against the secured broker", () => {
  it("SASL_SSL with SCRAM-SHA-512 reads the topic's offsets as the principal; a wrong password is refused", async () => {
    const { topic, produce } = await securedStack("plt-sasl", 2);
    await produce([{ key: null, value: "a", partition: 1 }]);
    await grant("User:alice", [{ resource: "topic", name: topic, operations: ["DESCRIBE"] }]);
    const admin = await connect(saslEnv("alice", true));
    expect(await admin.topicOffsets(topic)).toEqual([
      { partition: 0, logStartOffset: "0", highWatermark: "0" },
      { partition: 1, logStartOffset: "0", highWatermark: "1" },
    ]);
    await expect(
      connect({ ...saslEnv("alice", true), KAFKA_SASL_PASSWORD: "not-the-password" }),
    ).rejects.toThrow();
  });

  it("mutual TLS with a client certificate; a CA that did not sign the broker's certificate is refused", async () => {
    const { topic } = await securedStack("plt-mtls");
    const client = clientCertificate(uniqueName("plt"));
    await grant(client.principal, [{ resource: "topic", name: topic, operations: ["DESCRIBE"] }]);
    const admin = await connect(sslEnv(client));
    expect(await admin.topicOffsets(topic)).toEqual([
      { partition: 0, logStartOffset: "0", highWatermark: "0" },
    ]);
    // The client's own certificate as the only trusted CA: the broker's chain does not verify.
    await expect(connect({ ...sslEnv(client), KAFKA_SSL_CA_LOCATION: client.certificate })).rejects.toThrow();
  });

  it("OAUTHBEARER with a token provider names the principal", async () => {
    const { topic } = await securedStack("plt-oauth");
    const sub = uniqueName("plt-oauth");
    await grant(`User:${sub}`, [{ resource: "topic", name: topic, operations: ["DESCRIBE"] }]);
    const env = {
      KAFKA_BROKERS: SASL_BROKERS,
      KAFKA_SECURITY_PROTOCOL: "SASL_SSL",
      KAFKA_SASL_MECHANISM: "OAUTHBEARER",
      KAFKA_SSL_CA_LOCATION: caPath(),
    };
    const admin = await connect(env, () => Promise.resolve({ value: unsecuredToken(sub) }));
    expect(await admin.topicOffsets(topic)).toEqual([
      { partition: 0, logStartOffset: "0", highWatermark: "0" },
    ]);
  });
});
