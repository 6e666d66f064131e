/**
 * The secured broker of the `security` tests (test/security/globalSetup.ts starts it with
 * scripts/kafka/secure-kafka.sh): its listeners, the passwords and CA made in this run, client
 * certificates, the environment a CLI process needs for each listener, and ACL grants by the
 * super user `admin`.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import kafkajs, { type Kafka } from "kafkajs";
import { inject, onTestFinished } from "vitest";
import { loadConfig } from "../../src/config.js";
import { KafkaAdmin } from "../../src/kafka/admin.js";
import { createKafka } from "../../src/kafka/client.js";
import { createLogger } from "../../src/logger.js";
import { waitFor } from "./stack.js";

const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;

/** The SASL_SSL listener (SCRAM-SHA-512). */
export const SASL_BROKERS = `127.0.0.1:${process.env.KAFKA_SECURE_SASL_PORT ?? "9392"}`;
/** The SSL listener that requires client certificates. */
export const SSL_BROKERS = `127.0.0.1:${process.env.KAFKA_SECURE_SSL_PORT ?? "9393"}`;

/** The broker's data directory, made by this run's globalSetup. */
export function secureDir(): string {
  return inject("secureKafkaDir");
}

/** The CA certificate (PEM) the broker's certificate is signed by. */
export function caPath(): string {
  return join(secureDir(), "tls", "ca.pem");
}

/** The file holding `user`'s SCRAM-SHA-512 password (users: admin, alice, bob). */
export function passwordFile(user: string): string {
  return join(secureDir(), "users", `${user}.password`);
}

/** `user`'s SCRAM-SHA-512 password. */
export function passwordOf(user: string): string {
  return readFileSync(passwordFile(user), "utf8").trim();
}

/** A client certificate and its key, signed by the broker's CA. */
export interface ClientCertificate {
  readonly certificate: string;
  readonly key: string;
  /** The principal the broker sees: `User:CN=<name>`. */
  readonly principal: string;
}

/** Makes a client certificate CN=`name` valid `days` days (0: expired a second after it is made). */
export function clientCertificate(name: string, days = 2): ClientCertificate {
  const certificate = execFileSync("scripts/kafka/secure-kafka.sh", ["client-cert", name, String(days)], {
    env: { ...process.env, KAFKA_SECURE_DATA_DIR: secureDir() },
    encoding: "utf8",
  }).trim();
  return { certificate, key: certificate.replace(/\.pem$/, ".key"), principal: `User:CN=${name}` };
}

/**
 * The environment of a CLI process connecting to the SASL_SSL listener as `user`; the password
 * from KAFKA_SASL_PASSWORD_FILE unless `passwordInline`.
 */
export function saslEnv(user: string, passwordInline = false): Record<string, string> {
  return {
    KAFKA_BROKERS: SASL_BROKERS,
    KAFKA_SECURITY_PROTOCOL: "SASL_SSL",
    KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
    KAFKA_SASL_USERNAME: user,
    ...(passwordInline
      ? { KAFKA_SASL_PASSWORD: passwordOf(user) }
      : { KAFKA_SASL_PASSWORD_FILE: passwordFile(user) }),
    KAFKA_SSL_CA_LOCATION: caPath(),
  };
}

/** The environment of a CLI process connecting to the SSL listener with `client`'s certificate. */
export function sslEnv(client: ClientCertificate): Record<string, string> {
  return {
    KAFKA_BROKERS: SSL_BROKERS,
    KAFKA_SECURITY_PROTOCOL: "SSL",
    KAFKA_SSL_CA_LOCATION: caPath(),
    KAFKA_SSL_CERTIFICATE_LOCATION: client.certificate,
    KAFKA_SSL_KEY_LOCATION: client.key,
  };
}

/** A KafkaJS client of the super user `admin` over SASL_SSL, built from the settings as the product does. */
export function adminKafka(): Kafka {
  const config = loadConfig(saslEnv("admin"));
  return createKafka({
    brokers: config.kafka.brokers,
    clientId: "replayable-test-admin",
    log: createLogger("error"),
    security: config.kafka.security,
  });
}

/** Connects `admin`'s admin client, closed when the test finishes. */
export async function secureAdmin(): Promise<KafkaAdmin> {
  const admin = await KafkaAdmin.connect(adminKafka());
  onTestFinished(() => admin.close());
  return admin;
}

/** One ACL to grant: operations on a literal topic, group or the cluster. */
export interface Grant {
  readonly resource: "topic" | "group" | "cluster";
  readonly name: string;
  readonly operations: readonly ("READ" | "WRITE" | "DESCRIBE" | "DESCRIBE_CONFIGS")[];
}

/** Adds ALLOW ACLs for `principal` (from any host), as `kafka-acls --add` does. */
export async function grant(principal: string, grants: readonly Grant[]): Promise<void> {
  const admin = adminKafka().admin();
  await admin.connect();
  const types = {
    topic: AclResourceTypes.TOPIC,
    group: AclResourceTypes.GROUP,
    cluster: AclResourceTypes.CLUSTER,
  } as const;
  const acl = grants.flatMap((g) =>
    g.operations.map((operation) => ({
      resourceType: types[g.resource],
      resourceName: g.resource === "cluster" ? "kafka-cluster" : g.name,
      resourcePatternType: ResourcePatternTypes.LITERAL,
      principal,
      host: "*",
      operation: AclOperationTypes[operation],
      permissionType: AclPermissionTypes.ALLOW,
    })),
  );
  try {
    await admin.createAcls({ acl });
    // The broker's authorizer applies new ACLs from the metadata log a moment later.
    await waitFor(`the broker to list the new ACLs of ${principal}`, async () => {
      const { resources } = await admin.describeAcls({
        resourceType: AclResourceTypes.ANY,
        resourcePatternType: ResourcePatternTypes.ANY,
        principal,
        host: "*",
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY,
      });
      const listed = new Set(
        resources.flatMap((r) => r.acls.map((a) => `${r.resourceType}/${r.resourceName}/${a.operation}`)),
      );
      return acl.every((a) => listed.has(`${a.resourceType}/${a.resourceName}/${a.operation}`))
        ? true
        : undefined;
    });
  } finally {
    await admin.disconnect();
  }
}
