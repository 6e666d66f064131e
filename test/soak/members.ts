/**
 * The consumer group under test: 2–3 `replayable run` processes of the ledger projection, each
 * started through the package's bin entry (`node bin/replayable.js run …`, as an operator runs it;
 * never `npx`, which does not pass signals on). A supervisor restarts a member that exits on its
 * own, as systemd's `Restart=always` would, and writes the exit to the history: an unexpected exit
 * is a finding in itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { History } from "./history.js";

/** The repository's bin entry (loads tsx itself in a checkout). */
export const BIN = join(import.meta.dirname, "..", "..", "bin", "replayable.js");
/** The repository root (members run there). */
export const ROOT = join(import.meta.dirname, "..", "..");

/** What every member of the soak's group runs against. */
export interface MemberSetup {
  readonly topic: string;
  readonly group: string;
  readonly databaseUrl: string;
  readonly brokers: readonly string[];
  /** Folder of the members' log files (`<name>-<incarnation>.log`). */
  readonly logDir: string;
  /** Further environment of every member (e.g. a shorter session timeout). */
  readonly env: Readonly<Record<string, string>>;
}

/** Why a member is not running: it was never started, or the nemesis or the runner stopped it. */
type Intent = "run" | "killed" | "stopped";

/** One member: a name, and the `replayable run` process of its current incarnation. */
export class Member {
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #intent: Intent = "stopped";
  #paused = false;
  #incarnation = 0;
  #logFile = "";
  #restartTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly name: string,
    private readonly setup: MemberSetup,
    private readonly history: History,
  ) {}

  /** True while its process runs (a paused process counts as running). */
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** True between {@link pause} and {@link resume}. */
  get paused(): boolean {
    return this.#paused;
  }

  /** The pid of the current incarnation, if running. */
  get pid(): number | undefined {
    return this.running ? this.#child?.pid : undefined;
  }

  /** Log file of the current (or last) incarnation. */
  get logFile(): string {
    return this.#logFile;
  }

  /** Starts a new incarnation; does nothing when one is running. */
  start(): void {
    clearTimeout(this.#restartTimer);
    this.#intent = "run";
    if (this.running) return;
    this.#incarnation += 1;
    this.#logFile = join(this.setup.logDir, `${this.name}-${this.#incarnation}.log`);
    const fd = openSync(this.#logFile, "a");
    const child = spawn(
      process.execPath,
      [
        BIN,
        "run",
        "--projection",
        "ledger",
        "--group",
        this.setup.group,
        "--topic",
        this.setup.topic,
        "--database-url",
        this.setup.databaseUrl,
        "--brokers",
        this.setup.brokers.join(","),
        "--metrics-port",
        "0",
        "--no-migrate",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: "info", ...this.setup.env },
        // The log goes straight to a file: the runner does not copy it through its own event loop.
        stdio: ["ignore", fd, fd],
      },
    );
    closeSync(fd);
    this.#child = child;
    this.#paused = false;
    this.history.write("member-start", {
      member: this.name,
      incarnation: this.#incarnation,
      pid: child.pid,
      log: this.#logFile,
    });
    this.#exited = once(child, "exit").then(([code, signal]) => {
      this.#onExit(child, code as number | null, signal as NodeJS.Signals | null);
    });
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.#child) return;
    this.#paused = false;
    const expected = this.#intent !== "run";
    this.history.write("member-exit", {
      member: this.name,
      pid: child.pid,
      code,
      signal,
      expected,
      ...(expected ? {} : { logTail: this.tail(15) }),
    });
    if (!expected) {
      // Restart=always, after a second so that a member failing at once does not spin.
      this.#restartTimer = setTimeout(() => {
        if (this.#intent === "run" && !this.running) this.start();
      }, 1000);
    }
  }

  /** SIGKILL (a crash: no leave-group, nothing flushed); waits until the process is gone. */
  async kill(): Promise<void> {
    clearTimeout(this.#restartTimer);
    this.#intent = "killed";
    if (!this.running) return;
    if (this.#paused) this.#child!.kill("SIGCONT");
    this.#child!.kill("SIGKILL");
    await this.#exited;
  }

  /** SIGSTOP: the process freezes (no heartbeats, no transactions) but keeps its connections. */
  pause(): void {
    if (!this.running || this.#paused) return;
    this.#child!.kill("SIGSTOP");
    this.#paused = true;
  }

  /** SIGCONT after {@link pause}. */
  resume(): void {
    if (!this.running || !this.#paused) return;
    this.#child!.kill("SIGCONT");
    this.#paused = false;
  }

  /**
   * SIGTERM: the graceful stop (drain, commit, leave the group). After `timeoutMs` without an exit,
   * SIGKILL, written to the history as a finding (`member-stop-timeout`).
   * @returns the exit code, or the signal's name when a signal ended it (a member SIGTERMed before
   *   it installed its handlers ends by the signal), or null when it never ran.
   */
  async stop(timeoutMs = 60_000): Promise<number | NodeJS.Signals | null> {
    clearTimeout(this.#restartTimer);
    this.#intent = "stopped";
    if (!this.running) return this.#child?.exitCode ?? this.#child?.signalCode ?? null;
    this.resume();
    const child = this.#child!;
    child.kill("SIGTERM");
    const timer = setTimeout(() => {
      this.history.write("member-stop-timeout", { member: this.name, pid: child.pid, timeoutMs });
      child.kill("SIGKILL");
    }, timeoutMs);
    await this.#exited;
    clearTimeout(timer);
    return child.exitCode ?? child.signalCode;
  }

  /** The last `lines` lines of the current incarnation's log. */
  tail(lines = 10): string {
    try {
      return readFileSync(this.#logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }
}

/** The group's members, started and stopped together. */
export class Members {
  readonly all: readonly Member[];

  constructor(count: number, setup: MemberSetup, history: History) {
    this.all = Array.from({ length: count }, (_, i) => new Member(`member-${i + 1}`, setup, history));
  }

  /** Starts every member that is not running. */
  startAll(): void {
    for (const m of this.all) m.start();
  }

  /** Stops every member gracefully, in parallel; resolves with their exit codes. */
  async stopAll(timeoutMs?: number): Promise<(number | NodeJS.Signals | null)[]> {
    return Promise.all(this.all.map((m) => m.stop(timeoutMs)));
  }

  /** SIGKILLs every member (the runner's last resort on the way out). */
  async killAll(): Promise<void> {
    await Promise.all(this.all.map((m) => m.kill()));
  }

  /** The members running and not paused. */
  live(): Member[] {
    return this.all.filter((m) => m.running && !m.paused);
  }
}
