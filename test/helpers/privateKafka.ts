/**
 * A Kafka broker of a test's own (scripts/kafka/kafka.sh with other ports and data folder), for
 * tests that stop or restart the broker: the shared broker other test files use stays up.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./privatePostgres.js";

/** A private single-node broker; `brokers` is its bootstrap list. */
export interface PrivateKafka {
  readonly brokers: string;
  start(): void;
  /** Controlled shutdown (SIGTERM); the data stays. */
  stop(): void;
  /** Stops the broker and removes its data. */
  destroy(): void;
}

/** Starts a broker on free ports with its own data folder (jars come from the shared cache). */
export async function startPrivateKafka(): Promise<PrivateKafka> {
  const port = await freePort();
  const controllerPort = await freePort();
  const data = mkdtempSync(join(tmpdir(), "replayable-kafka-"));
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
    KAFKA_DATA_DIR: data,
  };
  const script = (command: string) =>
    execFileSync("scripts/kafka/kafka.sh", [command], { env, stdio: "inherit" });
  const broker: PrivateKafka = {
    brokers: `127.0.0.1:${port}`,
    start: () => script("up"),
    stop: () => script("stop"),
    destroy: () => {
      script("stop");
      rmSync(data, { recursive: true, force: true });
    },
  };
  broker.start();
  return broker;
}
