// Grants one ACL (ALLOW, any host, literal resource name) on the secured broker of secure-kafka.sh,
// as its super user `admin` over SASL_SSL: the local stand-in for Kafka's
// `kafka-acls --add --allow-principal P --operation O --topic|--group|--cluster NAME`.
// Usage: KAFKA_BROKERS=127.0.0.1:9392 KAFKA_SSL_CA_LOCATION=<ca.pem> KAFKA_SASL_PASSWORD_FILE=<admin.password> \
//          node grant-acl.mjs PRINCIPAL OPERATION topic|group|cluster NAME
// e.g. node grant-acl.mjs User:CN=carol Read topic ledger. Exits 2 on a bad argument, 1 when Kafka refuses.
import { readFileSync } from "node:fs";
import kafkajs from "kafkajs";

const { Kafka, logLevel, AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } =
  kafkajs;
const RESOURCES = { topic: "TOPIC", group: "GROUP", cluster: "CLUSTER" };
const [principal, operation, resource, name] = process.argv.slice(2);
const operationType = AclOperationTypes[(operation ?? "").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()];
const resourceType = AclResourceTypes[RESOURCES[resource ?? ""] ?? ""];
if (!principal?.startsWith("User:") || operationType === undefined || resourceType === undefined || !name) {
  console.error(
    "usage: grant-acl.mjs User:NAME OPERATION topic|group|cluster NAME  (OPERATION: Read, Write, Describe, DescribeConfigs, Delete, ...; cluster NAME: kafka-cluster)",
  );
  process.exit(2);
}
const kafka = new Kafka({
  clientId: "replayable-grant-acl",
  brokers: (process.env.KAFKA_BROKERS ?? "127.0.0.1:9392").split(","),
  ssl: { ca: [readFileSync(process.env.KAFKA_SSL_CA_LOCATION, "utf8")] },
  sasl: {
    mechanism: "scram-sha-512",
    username: "admin",
    password: readFileSync(process.env.KAFKA_SASL_PASSWORD_FILE, "utf8").trim(),
  },
  logLevel: logLevel.NOTHING,
});
const admin = kafka.admin();
try {
  await admin.connect();
  await admin.createAcls({
    acl: [
      {
        resourceType,
        resourceName: name,
        resourcePatternType: ResourcePatternTypes.LITERAL,
        principal,
        host: "*",
        operation: operationType,
        permissionType: AclPermissionTypes.ALLOW,
      },
    ],
  });
  console.error(`secure-kafka: allowed ${principal} ${operation} on ${resource} ${name}`);
} catch (error) {
  console.error(
    `secure-kafka: Kafka refused the ACL: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exitCode = 1;
} finally {
  await admin.disconnect();
}
