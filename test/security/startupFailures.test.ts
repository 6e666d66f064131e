/**
 * What cannot work is a clear start-up error with exit 2, never a retry loop: a wrong password,
 * an unknown CA, an expired client certificate, no client certificate where one is required, TLS
 * against a plaintext listener and the other way round, and a missing ACL (named with the
 * kafka-acls command that grants it). No password shows in any of the outputs.
 */
import { execFileSync } from "node:child_process";
import { X509Certificate, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { runCli } from "../helpers/process.js";
import { runArgs } from "../helpers/replay.js";
import {
  SASL_BROKERS,
  SSL_BROKERS,
  caPath,
  clientCertificate,
  grant,
  passwordOf,
  saslEnv,
  sslEnv,
} from "../helpers/secureKafka.js";
import { securedStack } from "../helpers/securedStack.js";
import { type TestDatabase, createTestDatabase, uniqueName, waitFor } from "../helpers/stack.js";

/** Every output of this file, scanned for secrets at the end. */
const outputs: string[] = [];
const wrongPassword = `wrong-${randomBytes(6).toString("hex")}`;

/**
 * A migrated database for the commands that reach Kafka: `status` and `run` check the schema
 * before they connect to a broker (issue 28), so an unmigrated DATABASE_URL would hide the
 * Kafka error under test.
 */
let migrated: TestDatabase;
beforeAll(async () => {
  migrated = await createTestDatabase();
});

async function cli(args: readonly string[], env: Record<string, string>) {
  const result = await runCli(args, { DATABASE_URL: migrated.url, ...env });
  outputs.push(result.stdout, result.stderr);
  return result;
}

function statusArgs(group: string): string[] {
  return ["status", "--projection", "ledger", "--group", group, "--output", "json"];
}

afterAll(async () => {
  await migrated?.drop();
  const secrets = [passwordOf("alice"), passwordOf("bob"), passwordOf("admin"), wrongPassword];
  for (const text of outputs) for (const secret of secrets) expect(text).not.toContain(secret);
});

describe("start-up errors, exit 2", () => {
  it("a wrong SASL password: the refused login, naming the user and the settings to check", async () => {
    const result = await cli(statusArgs(uniqueName("g")), {
      ...saslEnv("alice"),
      KAFKA_SASL_PASSWORD_FILE: "",
      KAFKA_SASL_PASSWORD: wrongPassword,
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      `replayable: Kafka refused the SASL login of KAFKA_SASL_USERNAME=alice (SCRAM-SHA-512) at ${SASL_BROKERS}`,
    );
    expect(result.stderr).toContain("Check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD");
  });

  it("an unknown CA: the broker's certificate is not trusted; KAFKA_SSL_CA_LOCATION is named", async () => {
    const dir = mkdtempSync(join(tmpdir(), "replayable-other-ca-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const otherCa = join(dir, "ca.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        join(dir, "ca.key"),
        "-out",
        otherCa,
        "-days",
        "2",
        "-subj",
        "/CN=another-ca",
      ],
      { stdio: "ignore" },
    );
    const result = await cli(statusArgs(uniqueName("g")), {
      ...saslEnv("alice"),
      KAFKA_SSL_CA_LOCATION: otherCa,
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(
      /replayable: the broker's TLS certificate at 127\.0\.0\.1:\d+ is not signed by a CA this client trusts \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)\): set KAFKA_SSL_CA_LOCATION/,
    );
  });

  it("an expired client certificate: a config error naming the setting and the expiry date", async () => {
    const client = clientCertificate(uniqueName("expired"), 0);
    const notAfter = new Date(new X509Certificate(readFileSync(client.certificate)).validTo);
    await waitFor(
      "the certificate to expire",
      () => (Date.now() > notAfter.getTime() ? true : undefined),
      5000,
    );
    const result = await cli(statusArgs(uniqueName("g")), sslEnv(client));
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      `KAFKA_SSL_CERTIFICATE_LOCATION=${client.certificate}: the client certificate (CN=${client.principal.slice("User:CN=".length)}) expired on ${notAfter.toISOString()}; renew it`,
    );
  });

  it("no client certificate where the listener requires one", async () => {
    const result = await cli(statusArgs(uniqueName("g")), {
      KAFKA_BROKERS: SSL_BROKERS,
      KAFKA_SECURITY_PROTOCOL: "SSL",
      KAFKA_SSL_CA_LOCATION: caPath(),
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(
      /requires a client certificate \(ERR_SSL_[A-Z0-9_/]+\): set KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION/,
    );
  });

  it("TLS against a plaintext listener, and plaintext against a TLS listener", async () => {
    const plaintextBroker = process.env.KAFKA_BROKERS ?? "127.0.0.1:9092";
    const tlsToPlain = await cli(statusArgs(uniqueName("g")), {
      ...saslEnv("alice"),
      KAFKA_BROKERS: plaintextBroker,
    });
    expect(tlsToPlain.code, tlsToPlain.stderr).toBe(2);
    expect(tlsToPlain.stderr).toContain(
      `the listener at ${plaintextBroker} does not speak TLS, but KAFKA_SECURITY_PROTOCOL=SASL_SSL: set KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT`,
    );
    const { KAFKA_SSL_CA_LOCATION: _ca, ...sasl } = saslEnv("alice");
    const plainToTls = await cli(statusArgs(uniqueName("g")), {
      ...sasl,
      KAFKA_SECURITY_PROTOCOL: "SASL_PLAINTEXT",
    });
    expect(plainToTls.code, plainToTls.stderr).toBe(2);
    expect(plainToTls.stderr).toContain(
      `the listener at ${SASL_BROKERS} speaks TLS, but KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT: set KAFKA_SECURITY_PROTOCOL=SASL_SSL`,
    );
  });

  it("a member whose principal may not Read its group or topic: the ACL is named, before joining and at the join", async () => {
    const { admin, db, topic, group: noAcl } = await securedStack("noacl");
    const describeOnly = uniqueName("g");
    await grant("User:bob", [
      { resource: "topic", name: topic, operations: ["READ"] },
      { resource: "group", name: describeOnly, operations: ["DESCRIBE"] },
    ]);
    const env = { ...saslEnv("bob"), DATABASE_URL: db.url };
    for (const group of [noAcl, describeOnly]) {
      const started = Date.now();
      const run = await cli(runArgs(db.url, topic, group), env);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(
        `replayable: Kafka refused Read on group '${group}' (GROUP_AUTHORIZATION_FAILED) for User:bob: grant it with kafka-acls --bootstrap-server ${SASL_BROKERS} --add --allow-principal User:bob --operation Read --group ${group}`,
      );
      // Not a retry loop: the member gives up at once.
      expect(Date.now() - started).toBeLessThan(30_000);
    }
    const otherTopic = uniqueName("noacl");
    await admin.createTopic(otherTopic, 1);
    const noTopicAcl = await cli(runArgs(db.url, otherTopic, noAcl), env);
    expect(noTopicAcl.code, noTopicAcl.stderr).toBe(2);
    expect(noTopicAcl.stderr).toContain(
      `replayable: Kafka refused Read on topic '${otherTopic}' (TOPIC_AUTHORIZATION_FAILED) for User:bob`,
    );
    expect(noTopicAcl.stderr).toContain(`--operation Read --topic ${otherTopic}`);
  });

  it("a member whose principal may Describe but not Write its DLQ topic: Write is named at start-up, before the first dead letter", async () => {
    const { admin, db, topic, group } = await securedStack("dlqacl");
    const dlq = uniqueName("dlqacl-dlq");
    await admin.createTopic(dlq, 1);
    await grant("User:bob", [
      { resource: "topic", name: topic, operations: ["READ"] },
      { resource: "group", name: group, operations: ["READ"] },
      { resource: "topic", name: dlq, operations: ["DESCRIBE"] },
    ]);
    const run = await cli(runArgs(db.url, topic, group), {
      ...saslEnv("bob"),
      DATABASE_URL: db.url,
      REPLAYABLE_DLQ_TOPIC: dlq,
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(
      `replayable: Kafka refused Write on topic '${dlq}' (not among the principal's authorized operations of the topic, KIP-430) for User:bob: grant it with kafka-acls --bootstrap-server ${SASL_BROKERS} --add --allow-principal User:bob --operation Write --topic ${dlq}`,
    );
  });
});
