/**
 * `make soak`: the randomized soak from the command line (docs/soak.md).
 *
 * Environment:
 * - SOAK_SECONDS: how long the faults and the producer run (default 600); the catch-up, the checks
 *   and the last replay take a few minutes more;
 * - SOAK_SEED: the seed (32-bit unsigned; default: a random one, printed);
 * - SOAK_MEMBERS (default 3), SOAK_RATE (records/s, default 40);
 * - SOAK_FAULTS: a comma-separated list of the only faults to pick (default all; nemesis.ts);
 * - the soak's own three-broker cluster: KAFKA_CLUSTER_PORT (client listeners, default 39092..),
 *   KAFKA_CLUSTER_CONTROLLER_PORT (39192..), KAFKA_CLUSTER_INTERNAL_PORT (inter-broker and the soak's
 *   own clients, 39292..), KAFKA_CLUSTER_ADVERTISED_PORT (what the brokers advertise: the soak's
 *   fault proxies listen there, 39392..), KAFKA_CLUSTER_DATA_DIR (default .data/kafka-soak);
 *   started when not running (`KAFKA_NODES=3 scripts/kafka/kafka.sh up`) and left running
 *   (`make soak-down` stops it);
 * - DATABASE_URL: the PostgreSQL server (a database `soak_<seed>_<hex>` is created there, and
 *   dropped when the run passes).
 * Exit code 0 when the checker found nothing, 1 otherwise (the seed and the history are printed).
 */
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");
const env = process.env;
env.KAFKA_NODES = "3";
env.KAFKA_CLUSTER_PORT ??= "39092";
env.KAFKA_CLUSTER_CONTROLLER_PORT ??= "39192";
env.KAFKA_CLUSTER_INTERNAL_PORT ??= "39292";
env.KAFKA_CLUSTER_ADVERTISED_PORT ??= "39392";
env.KAFKA_CLUSTER_DATA_DIR ??= join(root, ".data", "kafka-soak");
// The soak's own clients and kafka.sh's tools use the INTERNAL listeners; the members, the proxies
// on the advertised ports. The helpers read KAFKA_BROKERS when imported: set before the runner loads.
const internal = Number(env.KAFKA_CLUSTER_INTERNAL_PORT);
env.KAFKA_BROKERS = [0, 1, 2].map((i) => `127.0.0.1:${internal + i}`).join(",");

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    process.stderr.write(
      `soak: ${name} must be a whole number in [${min}, ${max}], got ${JSON.stringify(raw)}\n`,
    );
    process.exit(2);
  }
  return n;
}

const seconds = int("SOAK_SECONDS", 600, 10, 86_400);
const seed = int("SOAK_SEED", Math.floor(Math.random() * 2 ** 32), 0, 2 ** 32 - 1);
const members = int("SOAK_MEMBERS", 3, 2, 3);
const rate = int("SOAK_RATE", 40, 1, 10_000);
const runDir = join(
  root,
  ".data",
  "soak",
  `${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}-seed${seed}`,
);

const faults = env.SOAK_FAULTS?.split(",")
  .map((f) => f.trim())
  .filter((f) => f !== "");
const { runSoak } = await import("./runner.js");
const { FAULT_WEIGHTS, isFaultName } = await import("./nemesis.js");
const unknown = (faults ?? []).filter((f) => !isFaultName(f));
if (unknown.length > 0) {
  process.stderr.write(
    `soak: SOAK_FAULTS names no fault ${unknown.join(", ")}; the faults: ${Object.keys(FAULT_WEIGHTS).join(", ")}\n`,
  );
  process.exit(2);
}
const result = await runSoak({
  seconds,
  seed,
  members,
  ratePerSecond: rate,
  serverUrl: env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  runDir,
  ...(faults === undefined || faults.length === 0 ? {} : { faults: faults.filter(isFaultName) }),
  proxies: {
    clientPort: Number(env.KAFKA_CLUSTER_PORT),
    advertisedPort: Number(env.KAFKA_CLUSTER_ADVERTISED_PORT),
    nodes: 3,
  },
});
process.exit(result.ok ? 0 : 1);
