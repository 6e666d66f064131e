/**
 * Kafka failures no retry fixes become errors naming what to set or which ACL to grant; the error
 * objects are shaped as KafkaJS and Node make them (name, type, code, cause chain).
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createKafka } from "../../src/kafka/client.js";
import { kafkaSecurityFailure, type FailureContext } from "../../src/kafka/securityFailure.js";
import type { KafkaSecurity } from "../../src/kafkaSecurity.js";

const scram: KafkaSecurity = {
  protocol: "SASL_SSL",
  sasl: { mechanism: "SCRAM-SHA-512", username: "alice", password: "pw" },
  ssl: {
    ca: undefined,
    certificate: undefined,
    certificateSubject: undefined,
    key: undefined,
    keyPassword: undefined,
    verifyCertificate: true,
    verifyHostname: true,
  },
};
const context: FailureContext = {
  security: scram,
  brokers: ["b1:9092"],
  groupId: "ledger",
  groupOperation: "Read",
  topics: ["orders"],
  topicOperations: ["Read"],
};

/** An error as KafkaJS wraps one: `cause` chains, retries exceeded on top. */
function wrapped(inner: object): Error {
  return Object.assign(new Error("Failed to connect"), {
    name: "KafkaJSNumberOfRetriesExceeded",
    cause: Object.assign(new Error("inner"), inner),
  });
}

describe("kafkaSecurityFailure", () => {
  it("a refused SASL login names the user, the mechanism and the settings to check", () => {
    const error = kafkaSecurityFailure(
      wrapped({ name: "KafkaJSSASLAuthenticationError", message: "SASL SCRAM SHA512 authentication failed" }),
      context,
    );
    expect(error?.code).toBe("KAFKA_AUTHENTICATION");
    expect(error?.message).toMatch(
      /^Kafka refused the SASL login of KAFKA_SASL_USERNAME=alice \(SCRAM-SHA-512\) at b1:9092: SASL SCRAM SHA512 authentication failed\. Check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD/,
    );
    expect(error?.message).not.toContain("pw");
  });

  it.each([
    [
      "SELF_SIGNED_CERT_IN_CHAIN",
      "not signed by a CA this client trusts (SELF_SIGNED_CERT_IN_CHAIN): set KAFKA_SSL_CA_LOCATION",
    ],
    ["CERT_HAS_EXPIRED", "has expired (CERT_HAS_EXPIRED)"],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "set KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM=none"],
    ["ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED", "requires a client certificate"],
    ["ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE", "requires a client certificate"],
    [
      "ERR_SSL_WRONG_VERSION_NUMBER",
      "does not speak TLS, but KAFKA_SECURITY_PROTOCOL=SASL_SSL: set KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT",
    ],
  ])("a TLS failure %s says what to set", (code, expected) => {
    const error = kafkaSecurityFailure(wrapped({ name: "KafkaJSConnectionError", code }), context);
    expect(error?.code).toBe("KAFKA_AUTHENTICATION");
    expect(error?.message).toContain(expected);
  });

  it("a client certificate the broker refuses is named as such when one is configured", () => {
    const ssl = {
      ...scram.ssl!,
      certificate: { location: "/c.pem", pem: "" },
      certificateSubject: "CN=alice",
    };
    const error = kafkaSecurityFailure(wrapped({ code: "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA" }), {
      ...context,
      security: { protocol: "SSL", sasl: undefined, ssl },
    });
    expect(error?.message).toContain("refused the client certificate of KAFKA_SSL_CERTIFICATE_LOCATION");
  });

  it("a missing ACL names the operation, the resource, the principal and the kafka-acls command", () => {
    const group = kafkaSecurityFailure(wrapped({ type: "GROUP_AUTHORIZATION_FAILED" }), context);
    expect(group?.code).toBe("KAFKA_AUTHORIZATION");
    expect(group?.message).toBe(
      "Kafka refused Read on group 'ledger' (GROUP_AUTHORIZATION_FAILED) for User:alice: grant it with kafka-acls --bootstrap-server b1:9092 --add --allow-principal User:alice --operation Read --group ledger; docs/security.md lists the ACLs each command needs",
    );
    const topic = kafkaSecurityFailure(wrapped({ type: "TOPIC_AUTHORIZATION_FAILED" }), {
      ...context,
      topicOperations: ["Read", "DescribeConfigs"],
    });
    expect(topic?.message).toContain(
      "Kafka refused Read and DescribeConfigs on topic 'orders' (TOPIC_AUTHORIZATION_FAILED) for User:alice",
    );
    expect(topic?.message).toContain("--operation Read --operation DescribeConfigs --topic orders");
    const cluster = kafkaSecurityFailure(wrapped({ type: "CLUSTER_AUTHORIZATION_FAILED" }), context);
    expect(cluster?.message).toContain(
      "Kafka refused Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED)",
    );
    expect(cluster?.message).toContain("--operation Describe --cluster");
    const transactional = kafkaSecurityFailure(
      wrapped({ type: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" }),
      context,
    );
    expect(transactional?.message).toContain("Kafka refused Write on transactional-id");
  });

  it("leaves an unreachable broker or any other failure alone", () => {
    expect(kafkaSecurityFailure(wrapped({ code: "ECONNREFUSED" }), context)).toBeUndefined();
    expect(kafkaSecurityFailure(new Error("Connection timeout"), context)).toBeUndefined();
    expect(kafkaSecurityFailure(wrapped({ type: "UNKNOWN_TOPIC_OR_PARTITION" }), context)).toBeUndefined();
  });
});

describe("createKafka", () => {
  it("warns when TLS certificate verification is off, naming the setting", () => {
    const lines: string[] = [];
    const log = pino(
      { level: "warn" },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString("utf8"));
          done();
        },
      }),
    );
    const { security } = loadConfig({
      KAFKA_SECURITY_PROTOCOL: "SSL",
      KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION: "false",
    }).kafka;
    createKafka({ brokers: ["b1:9092"], clientId: "t", log, security });
    expect(lines.join("")).toContain("TLS certificate verification is OFF");
    expect(lines.join("")).toContain('"setting":"KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION"');
    lines.length = 0;
    createKafka({
      brokers: ["b1:9092"],
      clientId: "t",
      log,
      security: loadConfig({ KAFKA_SECURITY_PROTOCOL: "SSL" }).kafka.security,
    });
    expect(lines).toEqual([]);
  });
});
