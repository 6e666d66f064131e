// Waits until Kafka answers a metadata request (KafkaJS admin.describeCluster) listing at least
// `expectedBrokers` brokers (a broker is listed once registered and unfenced).
// Usage: KAFKA_BROKERS=host:port,... node wait-ready.mjs [timeoutSeconds] [expectedBrokers]
// Exits 0 when it answers, 1 when the timeout (seconds, default 60) passes first. expectedBrokers: default 1.
// For a secured broker (secure-kafka.sh): KAFKA_SECURITY_PROTOCOL=SASL_SSL with KAFKA_SSL_CA_LOCATION,
// KAFKA_SASL_MECHANISM=SCRAM-SHA-512, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD_FILE.
import { readFileSync } from "node:fs";
import { Kafka, logLevel } from "kafkajs";

const brokers = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const protocol = process.env.KAFKA_SECURITY_PROTOCOL ?? "PLAINTEXT";
const ca = process.env.KAFKA_SSL_CA_LOCATION;
const ssl = protocol.endsWith("SSL") ? (ca ? { ca: [readFileSync(ca, "utf8")] } : true) : undefined;
const sasl = protocol.startsWith("SASL_")
  ? {
      mechanism: (process.env.KAFKA_SASL_MECHANISM ?? "SCRAM-SHA-512").toLowerCase(),
      username: process.env.KAFKA_SASL_USERNAME ?? "",
      password: readFileSync(process.env.KAFKA_SASL_PASSWORD_FILE ?? "/dev/null", "utf8").trim(),
    }
  : undefined;
const deadline = Date.now() + Number(process.argv[2] ?? 60) * 1000;
const expected = Number(process.argv[3] ?? 1);
const kafka = new Kafka({
  clientId: "replayable-wait-ready",
  brokers,
  ...(ssl ? { ssl } : {}),
  ...(sasl ? { sasl } : {}),
  logLevel: logLevel.NOTHING,
  retry: { retries: 0 },
});

let lastError = "no attempt";
while (Date.now() < deadline) {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    await admin.disconnect();
    if (cluster.brokers.length >= expected) process.exit(0);
    lastError = `describeCluster lists ${cluster.brokers.length} of ${expected} brokers (ids ${cluster.brokers.map((b) => b.nodeId).join(",")})`;
  } catch (error) {
    lastError = error instanceof Error ? error.message : String(error);
    await admin.disconnect().catch(() => undefined);
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
}
console.error(`kafka: brokers at ${brokers.join(",")} did not answer describeCluster: ${lastError}`);
process.exit(1);
