/**
 * The soak's history (Jepsen's history): one JSON object per line, appended as things happen, so a
 * run that dies half-way still leaves what led there. Each line has `t` (ms since the run started),
 * `at` (ISO time) and `type`, e.g. `fault-start`, `fault-end`, `produce`, `produce-error`,
 * `offsets`, `member-exit`, `check`. The file is written synchronously: a few thousand short lines
 * per run, and no line is lost when the runner is killed.
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** One history line's fields besides `t`, `at` and `type`. */
export type HistoryFields = Readonly<Record<string, unknown>>;

/** An append-only JSON-lines history file. */
export class History {
  readonly #started = Date.now();
  readonly #recent: string[] = [];

  /**
   * Creates (or truncates) the file at `path`, its folder included.
   * @param echo called with each line's short form (for a live log); default: nothing.
   */
  constructor(
    readonly path: string,
    private readonly echo: (line: string) => void = () => undefined,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, "");
  }

  /** Milliseconds since the history was opened. */
  elapsedMs(): number {
    return Date.now() - this.#started;
  }

  /** Appends one event; bigint values are written as decimal strings. */
  write(type: string, fields: HistoryFields = {}): void {
    const line = JSON.stringify(
      { t: this.elapsedMs(), at: new Date().toISOString(), type, ...fields },
      (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v),
    );
    appendFileSync(this.path, `${line}\n`);
    this.#recent.push(line);
    if (this.#recent.length > 200) this.#recent.shift();
    if (type !== "produce" && type !== "offsets") this.echo(line);
  }

  /** The last `n` lines written (at most 200 are kept in memory). */
  tail(n = 40): string[] {
    return this.#recent.slice(-n);
  }
}
