/**
 * Kafka failures no retry fixes become errors naming what to set or which ACL to grant; the error
 * objects are shaped as KafkaJS and Node make them (name, type, code, cause chain).
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createKafka } from "../../src/kafka/client.js";
import { parseSaslHandshakeResponse, saslHandshakeRequest } from "../../src/kafka/saslProbe.js";
import { kafkaSecurityFailure, tlsListener, type FailureContext } from "../../src/kafka/securityFailure.js";
import type { KafkaSecurity } from "../../src/kafka/securityConfig.js";

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
    // OpenSSL 3.2+ (Node.js 24 and 26) names the same alert "ssl/tls alert bad certificate".
    ["ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE", "requires a client certificate"],
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

  it("reads @platformatic/kafka's errors too: a ResponseError holding a ProtocolError per failed part (issue 30)", async () => {
    const { ResponseError, AuthenticationError } = await import("@platformatic/kafka");
    // JoinGroup answered GROUP_AUTHORIZATION_FAILED (error code 30), wrapped as the feed reports it.
    const join = new Error("joining the consumer group failed", {
      cause: new ResponseError(11, 9, { "": [30, null] }, {}),
    });
    const group = kafkaSecurityFailure(join, context);
    expect(group?.code).toBe("KAFKA_AUTHORIZATION");
    expect(group?.message).toContain("Kafka refused Read on group 'ledger' (GROUP_AUTHORIZATION_FAILED)");
    const login = kafkaSecurityFailure(new AuthenticationError("SASL authentication failed."), context);
    expect(login?.code).toBe("KAFKA_AUTHENTICATION");
    expect(login?.message).toContain("Kafka refused the SASL login of KAFKA_SASL_USERNAME=alice");
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

describe("tlsListener: a plaintext client at a TLS listener", () => {
  const plaintext: FailureContext = {
    security: { protocol: "PLAINTEXT", sasl: undefined, ssl: undefined },
    brokers: ["b1:9093"],
  };
  const saslPlaintext: FailureContext = {
    security: { protocol: "SASL_PLAINTEXT", sasl: scram.sasl, ssl: undefined },
    brokers: ["b1:9093"],
  };

  it("PLAINTEXT at a SASL_SSL listener: SASL_SSL, not SSL, with the mechanisms it enables", () => {
    const message = tlsListener(plaintext, ["SCRAM-SHA-512", "PLAIN"]);
    expect(message).toContain(
      "the listener at b1:9093 speaks TLS, but KAFKA_SECURITY_PROTOCOL=PLAINTEXT: the listener needs TLS and a SASL login both: set KAFKA_SECURITY_PROTOCOL=SASL_SSL (not SSL), KAFKA_SASL_MECHANISM to one it enables (SCRAM-SHA-512, PLAIN)",
    );
    expect(message).not.toMatch(/=SSL\b/);
  });

  it("PLAINTEXT at an SSL listener: SSL; SASL_PLAINTEXT: SASL_SSL, or SSL without the SASL settings", () => {
    expect(tlsListener(plaintext, [])).toBe(
      "the listener at b1:9093 speaks TLS, but KAFKA_SECURITY_PROTOCOL=PLAINTEXT: set KAFKA_SECURITY_PROTOCOL=SSL (with KAFKA_SSL_CA_LOCATION unless its CA is a public one)",
    );
    expect(tlsListener(saslPlaintext, ["SCRAM-SHA-512"])).toMatch(
      /KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT: set KAFKA_SECURITY_PROTOCOL=SASL_SSL \(the listener needs TLS and a SASL login both; it enables SCRAM-SHA-512\)/,
    );
    expect(tlsListener(saslPlaintext, ["PLAIN"])).toContain(
      "it does not enable KAFKA_SASL_MECHANISM=SCRAM-SHA-512: use one of PLAIN",
    );
    expect(tlsListener(saslPlaintext, [])).toContain(
      "set KAFKA_SECURITY_PROTOCOL=SSL (with KAFKA_SSL_CA_LOCATION unless its CA is a public one); the listener asks for no SASL login",
    );
  });

  it("names both protocols when the listener's SASL could not be learnt", () => {
    expect(tlsListener(plaintext)).toContain(
      "set KAFKA_SECURITY_PROTOCOL=SSL (with KAFKA_SSL_CA_LOCATION unless its CA is a public one), or SASL_SSL if the listener also asks for a SASL login",
    );
  });
});

describe("the SaslHandshake probe", () => {
  /** A SaslHandshake v1 response as a broker frames it. */
  function response(correlationId: number, errorCode: number, mechanisms: string[]): Buffer {
    const strings = mechanisms.map((m) => {
      const b = Buffer.alloc(2 + Buffer.byteLength(m));
      b.writeInt16BE(Buffer.byteLength(m));
      b.write(m, 2);
      return b;
    });
    const head = Buffer.alloc(4 + 4 + 2 + 4);
    head.writeInt32BE(correlationId, 4);
    head.writeInt16BE(errorCode, 8);
    head.writeInt32BE(mechanisms.length, 10);
    const frame = Buffer.concat([head, ...strings]);
    frame.writeInt32BE(frame.length - 4, 0);
    return frame;
  }

  it("asks SaslHandshake v1 for a mechanism no broker has", () => {
    const request = saslHandshakeRequest(7);
    expect(request.readInt32BE(0)).toBe(request.length - 4);
    expect([request.readInt16BE(4), request.readInt16BE(6), request.readInt32BE(8)]).toEqual([17, 1, 7]);
    expect(request.toString("utf8")).toContain("REPLAYABLE-PROBE");
  });

  it("reads the mechanisms of a SASL listener, none for a listener without SASL, nothing from garbage", () => {
    expect(parseSaslHandshakeResponse(response(1, 33, ["SCRAM-SHA-512", "PLAIN"]), 1)).toEqual([
      "SCRAM-SHA-512",
      "PLAIN",
    ]);
    expect(parseSaslHandshakeResponse(response(1, 34, []), 1)).toEqual([]);
    expect(parseSaslHandshakeResponse(response(2, 33, ["PLAIN"]), 1)).toBeUndefined();
    expect(parseSaslHandshakeResponse(response(1, 35, []), 1)).toBeUndefined();
    expect(parseSaslHandshakeResponse(Buffer.from("HTTP/1.1 400 Bad"), 1)).toBeUndefined();
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
