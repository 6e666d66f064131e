/**
 * Before the integration tests: the local Kafka broker is started (idempotent) and PostgreSQL
 * must answer. Fails fast with what to do when either is missing.
 */
import { execFileSync } from "node:child_process";

export default function setup(): void {
  execFileSync("scripts/ensure-postgres.sh", { stdio: "inherit" });
  execFileSync("scripts/kafka/kafka.sh", ["up"], { stdio: "inherit" });
}
