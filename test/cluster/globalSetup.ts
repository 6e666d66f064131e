/**
 * Before the cluster tests: the local three-node Kafka cluster (`KAFKA_NODES=3 scripts/kafka/kafka.sh up`,
 * ports 19092..19094, data in .data/kafka-cluster) is started, or found running (idempotent), and
 * PostgreSQL must answer. The one-node broker of the integration tests (9092) is not touched.
 * The cluster stays up afterwards, like the one-node broker; `make down` stops both.
 */
import { execFileSync } from "node:child_process";
import { CLUSTER_NODES } from "../helpers/clusterBrokers.js";

export default function setup(): void {
  execFileSync("scripts/ensure-postgres.sh", { stdio: "inherit" });
  const started = Date.now();
  execFileSync("scripts/kafka/kafka.sh", ["up"], {
    stdio: "inherit",
    env: { ...process.env, KAFKA_NODES: String(CLUSTER_NODES) },
  });
  console.log(`cluster: ${CLUSTER_NODES} nodes ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
