/** Running the CLI in a subprocess, as a user does: exit codes, stdout, stderr and /metrics. */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { onTestFailed, onTestFinished } from "vitest";
import { waitFor } from "./stack.js";

/** A running CLI process with its collected output. */
export interface CliProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until stderr contains `text`. */
  waitForStderr(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** The /metrics port, read from the "serving /metrics" log line. */
  metricsPort(timeoutMs?: number): Promise<number>;
  /** Sends `signal` to the CLI (to its process group with {@link CliOptions.processGroup}) if still running. */
  signal(signal: NodeJS.Signals): void;
  /** Sends SIGKILL if still running. */
  kill(): void;
}

/** Where a CLI process runs. */
export interface CliOptions {
  /** Working directory (default: the repository's); outside the repository, `bin/replayable.js` loads tsx itself. */
  readonly cwd?: string;
  /**
   * The program (and its first arguments) that starts the CLI instead of this checkout's, e.g.
   * `["npx", "replayable"]` in a project that installed the package.
   */
  readonly command?: readonly [string, ...string[]];
  /** The environment `env` is added to (default: this process's). */
  readonly baseEnv?: NodeJS.ProcessEnv;
  /**
   * Starts the CLI in a process group of its own and signals the whole group, as a terminal's
   * Ctrl-C does. Needed under `npx`: npm exec does not pass on a signal sent to it alone (on
   * SIGTERM it exits and the CLI runs on). The CLI's own exit code is then not seen (npm exits on
   * the signal): `exited` resolves once the CLI closed its output, i.e. has exited.
   */
  readonly processGroup?: boolean;
}

const BIN = fileURLToPath(new URL("../../bin/replayable.js", import.meta.url));
/** The resolve hook bin/replayable.js loads first: the CLI's start-up as users run it. */
const RESOLVE_HOOKS = fileURLToPath(new URL("../../bin/resolveHooks.js", import.meta.url));

/** Starts `replayable <args>` through tsx with `env` added to the environment. */
export function startCli(
  args: readonly string[],
  env: Record<string, string> = {},
  options: CliOptions = {},
): CliProcess {
  const [program, ...argv] =
    options.command !== undefined
      ? [...options.command, ...args]
      : options.cwd === undefined
        ? [process.execPath, "--import", RESOLVE_HOOKS, "--import", "tsx", "src/cli/main.ts", ...args]
        : [process.execPath, BIN, ...args];
  const group = options.processGroup === true;
  const child = spawn(program, argv, {
    env: { ...(options.baseEnv ?? process.env), LOG_LEVEL: "info", REPLAYABLE_METRICS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: group,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  let running = true;
  const exited = once(child, group ? "close" : "exit").then(([code, signal]) => {
    running = false;
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  const send = (signal: NodeJS.Signals) => {
    if (!running || child.pid === undefined) return;
    try {
      process.kill(group ? -child.pid : child.pid, signal);
    } catch {
      // Exited meanwhile (ESRCH).
    }
  };
  const matches = (text: string | RegExp) => (typeof text === "string" ? err.includes(text) : text.test(err));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitForStderr(text, timeoutMs = 60_000) {
      await waitFor(
        `stderr to contain ${String(text)}`,
        () => (matches(text) ? true : undefined),
        timeoutMs,
        50,
      );
    },
    async metricsPort(timeoutMs = 60_000) {
      return waitFor(
        "the metrics server to listen",
        () => {
          const line = err.split("\n").find((l) => l.includes('"msg":"serving /metrics'));
          return line === undefined ? undefined : (JSON.parse(line) as { port: number }).port;
        },
        timeoutMs,
        50,
      );
    },
    signal: send,
    kill() {
      send("SIGKILL");
    },
  };
}

/**
 * {@link startCli} for one test: its last stderr lines are printed if the test fails, and it is
 * stopped with SIGTERM (and awaited) when the test finishes.
 */
export function startCliInTest(
  args: readonly string[],
  env: Record<string, string> = {},
  options: CliOptions = {},
): CliProcess {
  const cli = startCli(args, env, options);
  onTestFailed(() => {
    process.stderr.write(
      `--- replayable ${args[0] ?? ""} stderr (last lines) ---\n${cli.stderr().split("\n").slice(-30).join("\n")}\n`,
    );
  });
  onTestFinished(async () => {
    cli.signal("SIGTERM");
    await cli.exited;
  });
  return cli;
}

/**
 * `wait`, and when it fails, its error with the members' last warnings and errors appended (pino's
 * level 40 and above, as JSON or pretty lines) and last lines, so that the failure's summary, the part of a CI log
 * that is kept, says what the members saw (the full stderr goes to the test's output as well).
 */
export async function explainedByMembers<T>(members: readonly CliProcess[], wait: Promise<T>): Promise<T> {
  try {
    return await wait;
  } catch (error) {
    const cut = (line: string) => {
      // A JSON line as its time, level, message and error message (its stack would fill the limit).
      try {
        const { time, level, msg, err } = JSON.parse(line) as {
          time?: string;
          level?: number;
          msg?: string;
          err?: { message?: string };
        };
        line = `${time} ${level} ${msg}${err?.message === undefined ? "" : `: ${err.message}`}`;
      } catch {
        // Not JSON: as it is.
      }
      return line.length > 400 ? `${line.slice(0, 400)}…` : line;
    };
    const warnings = members.map((member, i) => {
      const lines = member
        .stderr()
        .split("\n")
        .filter((line) => /"level":(?:[4-9]\d)|\b(?:WARN|ERROR|FATAL)\b/.test(line))
        .slice(-12)
        .map(cut);
      const last = member.stderr().trimEnd().split("\n").slice(-5).map(cut);
      return `--- member ${i}: its last warnings and errors ---\n${lines.join("\n")}\n--- member ${i}: its last lines ---\n${last.join("\n")}`;
    });
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${message}\n${warnings.join("\n")}`, { cause: error });
  }
}

/** Runs `replayable <args>` to completion. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  options: CliOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startCli(args, { LOG_LEVEL: "warn", ...env }, options);
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** Sums a metric's samples in Prometheus text from /metrics, optionally only those with `labels`. */
export async function scrapeMetric(
  port: number,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return sumMetric(text, name, labels);
}

/** Sums the samples of `name` in Prometheus text whose labels include `labels`. */
export function sumMetric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-z_:][a-z0-9_:]*)(\{[^}]*\})? (\S+)$/i.exec(line);
    if (!m || m[1] !== name) continue;
    const set = m[2] ?? "";
    if (Object.entries(labels).every(([k, v]) => set.includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}
