/**
 * A PostgreSQL server of a test's own (initdb in a temp folder, its own port), for tests that
 * stop or restart the server: they must not disturb the shared server other test files use.
 * Runs the Debian binaries as the `postgres` OS user (initdb refuses root). With `tls`, the
 * server has `ssl = on` and a pg_hba.conf of `hostssl` lines only: it refuses plaintext TCP.
 */
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CertificateFiles } from "./testCertificates.js";

/** A private PostgreSQL server; `url` points at its `postgres` database. */
export interface PrivatePostgres {
  readonly port: number;
  readonly url: string;
  start(): void;
  /** `pg_ctl stop -m fast`: connections are cut, like an outage. */
  stop(): void;
  restart(): void;
  /** Stops the server (`pg_ctl stop -m immediate`) and removes its data folder. */
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
  /**
   * The server's certificate and key: `ssl = on`, and TCP connections only with TLS (`hostssl`).
   * With `clientCaFile`, the server asks for client certificates signed by it (`ssl_ca_file`).
   */
  readonly tls?: CertificateFiles & { readonly clientCaFile?: string };
  /** pg_hba.conf lines put before the catch-all `hostssl` line (with `tls`), e.g. `hostssl all alice 127.0.0.0/8 cert`. */
  readonly hba?: readonly string[];
  /** Addresses to listen on; default 127.0.0.1 (any of 127.0.0.0/8 may be given, e.g. 127.0.0.2). */
  readonly listenAddresses?: readonly string[];
}

/** The `postgres` OS user's uid, when we run as root (its files must be its own). */
function postgresUid(): number | undefined {
  return process.getuid?.() === 0
    ? Number(execFileSync("id", ["-u", "postgres"]).toString().trim())
    : undefined;
}

/** ssl = on with the given certificate, and a pg_hba.conf that accepts TCP only over TLS. */
function configureTls(
  data: string,
  tls: NonNullable<PrivatePostgresOptions["tls"]>,
  hostAuth: string,
  hba: readonly string[],
): void {
  const uid = postgresUid();
  const files: [string, string][] = [
    [tls.certFile, "server.crt"],
    [tls.keyFile, "server.key"],
  ];
  if (tls.clientCaFile !== undefined) files.push([tls.clientCaFile, "root.crt"]);
  for (const [from, to] of files) {
    copyFileSync(from, join(data, to));
    chmodSync(join(data, to), 0o600);
    if (uid !== undefined) chownSync(join(data, to), uid, 0);
  }
  appendFileSync(
    join(data, "postgresql.conf"),
    `\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n${tls.clientCaFile === undefined ? "" : "ssl_ca_file = 'root.crt'\n"}`,
  );
  writeFileSync(
    join(data, "pg_hba.conf"),
    ["local all all trust", ...hba, `hostssl all all 127.0.0.0/8 ${hostAuth}`, ""].join("\n"),
  );
}

/** initdb and start a server on a free port (trust auth on 127.0.0.1 unless a password is given). */
export async function startPrivatePostgres(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "replayable-pg-"));
  chmodSync(dir, 0o777);
  const uid = postgresUid();
  if (uid !== undefined) chownSync(dir, uid, 0);
  const data = join(dir, "data");
  const bin = binDir();
  const auth = ["-A", "trust"];
  if (options.password !== undefined) {
    const pwfile = join(dir, "pwfile");
    writeFileSync(pwfile, `${options.password}\n`, { mode: 0o644 });
    auth.splice(0, 2, "--auth-local=trust", "--auth-host=scram-sha-256", `--pwfile=${pwfile}`);
  }
  asPostgres([`${bin}/initdb`, "-D", data, ...auth, "-U", "postgres", "--no-sync"]);
  if (options.tls !== undefined)
    configureTls(
      data,
      options.tls,
      options.password === undefined ? "trust" : "scram-sha-256",
      options.hba ?? [],
    );
  const listen = (options.listenAddresses ?? ["127.0.0.1"]).join(",");
  const pgctl = (...args: string[]) =>
    asPostgres([`${bin}/pg_ctl`, "-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", ...args]);
  const server: PrivatePostgres = {
    port,
    url:
      options.password === undefined
        ? `postgres://postgres@127.0.0.1:${port}/postgres`
        : `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`,
    start: () => pgctl("-o", `-p ${port} -k ${dir} -c listen_addresses=${listen} -c fsync=off`, "start"),
    stop: () => pgctl("-m", "fast", "stop"),
    restart: () => {
      server.stop();
      server.start();
    },
    destroy: () => {
      if (existsSync(join(data, "postmaster.pid"))) pgctl("-m", "immediate", "stop");
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    server.start();
  } catch (error) {
    const log = existsSync(join(dir, "server.log")) ? readFileSync(join(dir, "server.log"), "utf8") : "";
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL did not start within 60 s: ${String(error)}\n${log.slice(-2000)}`, {
      cause: error,
    });
  }
  return server;
}
