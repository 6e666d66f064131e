/**
 * Before the security tests: PostgreSQL must answer, and one secured broker of this run is started
 * (scripts/kafka/secure-kafka.sh: SASL_SSL on 9392, SSL with client certificates on 9393,
 * StandardAuthorizer) in a fresh data directory, so its CA, certificates and SCRAM passwords are
 * made in this run. After the tests the broker is stopped and the directory removed.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** The secured broker's data directory (tls/, users/), see test/helpers/secureKafka.ts. */
    secureKafkaDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  execFileSync("scripts/ensure-postgres.sh", { stdio: "inherit" });
  const dir = mkdtempSync(join(tmpdir(), "replayable-secure-kafka-"));
  const env = { ...process.env, KAFKA_SECURE_DATA_DIR: dir };
  const started = Date.now();
  execFileSync("scripts/kafka/secure-kafka.sh", ["up"], { stdio: "inherit", env });
  console.log(`security: secured broker ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  project.provide("secureKafkaDir", dir);
  return () => {
    execFileSync("scripts/kafka/secure-kafka.sh", ["down"], { stdio: "inherit", env });
  };
}
