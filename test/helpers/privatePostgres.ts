/**
 * A PostgreSQL server of a test's own (initdb in a temp folder, its own port), for tests that
 * stop or restart the server: they must not disturb the shared server other test files use.
 * Runs the Debian binaries as the `postgres` OS user (initdb refuses root).
 */
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A private PostgreSQL server; `url` points at its `postgres` database. */
export interface PrivatePostgres {
  readonly port: number;
  readonly url: string;
  start(): void;
  /** `pg_ctl stop -m fast`: connections are cut, like an outage. */
  stop(): void;
  restart(): void;
  /** Stops the server and removes its data folder. */
  destroy(): void;
}

function binDir(): string {
  const versions = readdirSync("/usr/lib/postgresql").sort();
  const latest = versions[versions.length - 1];
  if (latest === undefined) throw new Error("no PostgreSQL binaries under /usr/lib/postgresql");
  return `/usr/lib/postgresql/${latest}/bin`;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function asPostgres(args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const [cmd, ...rest] = asRoot ? ["runuser", "-u", "postgres", "--", ...args] : args;
  execFileSync(cmd!, rest, { stdio: ["ignore", "ignore", "pipe"] });
}

/** Options for {@link startPrivatePostgres}. */
export interface PrivatePostgresOptions {
  /** Password of the `postgres` role; when set, TCP connections need it (scram-sha-256) and `url` carries it. */
  readonly password?: string;
}

/** initdb and start a server on a free port (trust auth on 127.0.0.1 unless a password is given). */
export async function startPrivatePostgres(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "replayable-pg-"));
  chmodSync(dir, 0o777);
  if (process.getuid?.() === 0)
    chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), 0);
  const data = join(dir, "data");
  const bin = binDir();
  const auth = ["-A", "trust"];
  if (options.password !== undefined) {
    const pwfile = join(dir, "pwfile");
    writeFileSync(pwfile, `${options.password}\n`, { mode: 0o644 });
    auth.splice(0, 2, "--auth-local=trust", "--auth-host=scram-sha-256", `--pwfile=${pwfile}`);
  }
  asPostgres([`${bin}/initdb`, "-D", data, ...auth, "-U", "postgres", "--no-sync"]);
  const pgctl = (...args: string[]) =>
    asPostgres([`${bin}/pg_ctl`, "-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", ...args]);
  const server: PrivatePostgres = {
    port,
    url:
      options.password === undefined
        ? `postgres://postgres@127.0.0.1:${port}/postgres`
        : `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`,
    start: () => pgctl("-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, "start"),
    stop: () => pgctl("-m", "fast", "stop"),
    restart: () => {
      server.stop();
      server.start();
    },
    destroy: () => {
      if (existsSync(join(data, "postmaster.pid"))) server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  server.start();
  return server;
}
