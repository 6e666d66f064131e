/**
 * Before the security tests: PostgreSQL must answer, and one secured broker of this run is started
 * (scripts/kafka/secure-kafka.sh: SASL_SSL on 9392, SSL with client certificates on 9393,
 * StandardAuthorizer) in a fresh data directory, .data/kafka-secure-test (KAFKA_SECURE_TEST_DATA_DIR),
 * so its CA, certificates and SCRAM passwords are made in this run. After the tests the broker is
 * stopped and the directory removed; `make down` does the same after an interrupted run.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { loadConfig } from "../../src/config.js";
import { KafkaAdmin } from "../../src/kafka/admin.js";
import { createKafka } from "../../src/kafka/client.js";
import { createLogger } from "../../src/logger.js";
import { waitFor } from "../helpers/stack.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The secured broker's data directory (tls/, users/), see test/helpers/secureKafka.ts. */
    secureKafkaDir: string;
  }
}

/**
 * Makes the broker create __consumer_offsets now: on a fresh broker the first OffsetFetch answers
 * NOT_COORDINATOR while the topic is being created, and KafkaJS's admin does not retry it.
 */
async function createOffsetsTopic(dir: string): Promise<void> {
  const config = loadConfig({
    KAFKA_BROKERS: `127.0.0.1:${process.env.KAFKA_SECURE_SASL_PORT ?? "9392"}`,
    KAFKA_SECURITY_PROTOCOL: "SASL_SSL",
    KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
    KAFKA_SASL_USERNAME: "admin",
    KAFKA_SASL_PASSWORD_FILE: join(dir, "users", "admin.password"),
    KAFKA_SSL_CA_LOCATION: join(dir, "tls", "ca.pem"),
  });
  const kafka = createKafka({
    brokers: config.kafka.brokers,
    clientId: "replayable-test-setup",
    log: createLogger("silent"),
    security: config.kafka.security,
  });
  const admin = await KafkaAdmin.connect(kafka);
  try {
    await waitFor("the broker to answer OffsetFetch", async () =>
      (await admin.groupCommittedOffsets("replayable-warm-up")) ? true : undefined,
    );
  } finally {
    await admin.close();
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  execFileSync("scripts/ensure-postgres.sh", { stdio: "inherit" });
  const dir = process.env.KAFKA_SECURE_TEST_DATA_DIR ?? join(process.cwd(), ".data", "kafka-secure-test");
  const env = { ...process.env, KAFKA_SECURE_DATA_DIR: dir };
  const started = Date.now();
  // A broker left by an interrupted run (its pid file is in the directory) goes first, with its CA.
  execFileSync("scripts/kafka/secure-kafka.sh", ["down"], { stdio: "inherit", env });
  execFileSync("scripts/kafka/secure-kafka.sh", ["up"], { stdio: "inherit", env });
  await createOffsetsTopic(dir);
  console.log(`security: secured broker ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  project.provide("secureKafkaDir", dir);
  return () => {
    execFileSync("scripts/kafka/secure-kafka.sh", ["down"], { stdio: "inherit", env });
  };
}
