/**
 * Before the fault tests: PostgreSQL must answer, and the faults cluster (three nodes, ports
 * 29092..29094, advertised to clients as the proxy ports 29392..29394, INTERNAL listeners
 * 29292..29294, data in .data/kafka-faults; see test/helpers/faultClusterPorts.ts) is started or
 * found running (idempotent). The broker proxies are not started here: they run in each test file
 * (test/helpers/faultCluster.ts), which switches them; kafka.sh checks readiness through the
 * INTERNAL listeners, so it needs no proxy. The cluster stays up afterwards; `make down` stops it.
 */
import { execFileSync } from "node:child_process";
import { FAULT_CLUSTER_ENV, FAULT_NODES } from "../helpers/faultClusterPorts.js";

export default function setup(): void {
  execFileSync("scripts/ensure-postgres.sh", { stdio: "inherit" });
  const started = Date.now();
  execFileSync("scripts/kafka/kafka.sh", ["up"], {
    stdio: "inherit",
    env: { ...process.env, ...FAULT_CLUSTER_ENV },
  });
  console.log(`faults: ${FAULT_NODES} nodes ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
