/**
 * A real Prometheus server of a test's own (the Debian `prometheus` package: config, TSDB and
 * port of its own, scrape interval 1 s), and `promtool check metrics`. Never the machine's
 * Prometheus service, if one runs.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./privatePostgres.js";
import { waitFor } from "./stack.js";

/** A running Prometheus server scraping `targets`. */
export interface PrivatePrometheus {
  readonly url: string;
  /** Evaluates an instant query; the samples' values as numbers (empty when no series matches). */
  query(expr: string): Promise<number[]>;
  /** Its log (stderr), for failure messages. */
  log(): string;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

interface QueryAnswer {
  status: string;
  error?: string;
  data?: { resultType: string; result: { value: [number, string] }[] };
}

/**
 * Starts `prometheus` scraping `targets` (host:port) every second, with `--storage.tsdb.path`
 * and the config in a temp folder and a free port, and waits until it is ready.
 * @throws when the binary is missing (install the Debian package `prometheus`) or it does not get ready.
 */
export async function startPrometheus(targets: readonly string[]): Promise<PrivatePrometheus> {
  requireBinary("prometheus");
  const dir = mkdtempSync(join(tmpdir(), "replayable-prom-"));
  const port = await freePort();
  const config = join(dir, "prometheus.yml");
  writeFileSync(
    config,
    [
      "global:",
      "  scrape_interval: 1s",
      "  evaluation_interval: 1s",
      "scrape_configs:",
      "  - job_name: replayable",
      "    static_configs:",
      `      - targets: [${targets.map((t) => JSON.stringify(t)).join(", ")}]`,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(
    "prometheus",
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const exited = once(child, "exit");
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      "Prometheus to be ready",
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited ${child.exitCode}: ${stderr}`);
        return (await fetch(`${url}/-/ready`)).ok ? true : undefined;
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    log: () => stderr,
    stop,
    async query(expr) {
      const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const answer = (await response.json()) as QueryAnswer;
      if (answer.status !== "success" || answer.data === undefined) {
        throw new Error(`query ${expr} failed: ${answer.error ?? response.status}`);
      }
      return answer.data.result.map((r) => Number(r.value[1]));
    },
  };
}

/** Runs `promtool check metrics` on Prometheus text; its exit code and what it printed. */
export function promtoolCheckMetrics(text: string): { code: number | null; output: string } {
  requireBinary("promtool");
  const result = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (result.error) throw result.error;
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

/** @throws Error saying how to install the Debian package when `name` is not on PATH. */
function requireBinary(name: "prometheus" | "promtool"): void {
  const probe = spawnSync(name, ["--version"], { stdio: "ignore" });
  if (probe.error !== undefined) {
    throw new Error(`${name} not found: run scripts/ensure-prometheus.sh (Debian package "prometheus")`);
  }
}
