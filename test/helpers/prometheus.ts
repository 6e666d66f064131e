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

/** One scrape job beyond the default `replayable` job: its name, scheme, CA and credentials. */
export interface ScrapeJob {
  readonly name: string;
  readonly targets: readonly string[];
  readonly scheme?: "http" | "https";
  /** tls_config.ca_file: the CA that signed the target's certificate. */
  readonly caFile?: string;
  /** basic_auth: username and password. */
  readonly basicAuth?: { readonly username: string; readonly password: string };
}

function jobConfig(job: ScrapeJob): string[] {
  return [
    `  - job_name: ${JSON.stringify(job.name)}`,
    ...(job.scheme === undefined ? [] : [`    scheme: ${job.scheme}`]),
    ...(job.caFile === undefined ? [] : ["    tls_config:", `      ca_file: ${JSON.stringify(job.caFile)}`]),
    ...(job.basicAuth === undefined
      ? []
      : [
          "    basic_auth:",
          `      username: ${JSON.stringify(job.basicAuth.username)}`,
          `      password: ${JSON.stringify(job.basicAuth.password)}`,
        ]),
    "    static_configs:",
    `      - targets: [${job.targets.map((t) => JSON.stringify(t)).join(", ")}]`,
  ];
}

/**
 * Starts `prometheus` scraping `targets` (host:port) every second in job `replayable` (or the
 * jobs given), with `--storage.tsdb.path` and the config in a temp folder and a free port, and
 * waits until it is ready.
 * @throws when the binary is missing (install the Debian package `prometheus`) or it does not get ready.
 */
export async function startPrometheus(
  targets: readonly string[] | readonly ScrapeJob[],
): Promise<PrivatePrometheus> {
  requireBinary("prometheus");
  const dir = mkdtempSync(join(tmpdir(), "replayable-prom-"));
  const port = await freePort();
  const config = join(dir, "prometheus.yml");
  const jobs: readonly ScrapeJob[] = targets.every((t) => typeof t === "string")
    ? [{ name: "replayable", targets: targets }]
    : targets;
  writeFileSync(
    config,
    [
      "global:",
      "  scrape_interval: 1s",
      "  evaluation_interval: 1s",
      "scrape_configs:",
      ...jobs.flatMap(jobConfig),
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
