import { readFileSync } from "node:fs";
import kafkajs from "kafkajs";
const { Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = kafkajs;
const D = "/tmp/ks-secure";
const kafka = new Kafka({ clientId: "acl", brokers: ["127.0.0.1:9392"], logLevel: logLevel.NOTHING,
  ssl: { ca: [readFileSync(`${D}/tls/ca.pem`, "utf8")] },
  sasl: { mechanism: "scram-sha-512", username: "admin", password: readFileSync(`${D}/users/admin.password`, "utf8").trim() } });
const admin = kafka.admin();
await admin.connect();
const [principal, ...specs] = process.argv.slice(2);
// spec: TYPE:NAME:OP e.g. TOPIC:t1:READ GROUP:g:READ CLUSTER:kafka-cluster:DESCRIBE
const acl = specs.map((s) => { const [t, n, op] = s.split(":"); return { resourceType: AclResourceTypes[t], resourceName: n, resourcePatternType: ResourcePatternTypes.LITERAL, principal, host: "*", operation: AclOperationTypes[op], permissionType: AclPermissionTypes.ALLOW }; });
if (process.env.CREATE_TOPICS) for (const t of process.env.CREATE_TOPICS.split(",")) await admin.createTopics({ topics: [{ topic: t, numPartitions: 2 }] }).catch(e=>console.log(e.message));
if (acl.length) console.log(await admin.createAcls({ acl }));
await admin.disconnect();
