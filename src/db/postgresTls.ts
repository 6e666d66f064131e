/**
 * libpq's TLS parameters of a PostgreSQL URL (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`, ...)
 * mapped to node-postgres's `ssl` option, with libpq's meaning of each `sslmode` (PostgreSQL
 * docs, libpq "SSL Support", table "SSL Mode Descriptions"). node-postgres reads these
 * parameters itself with other meanings (pg-connection-string 2.x treats `require` and
 * `verify-ca` as `verify-full`; its `uselibpqcompat=true` leaves `allow` verifying the host name,
 * makes `prefer` require TLS, and has no `sslrootcert=system`), so they are taken out of the URL
 * and the `ssl` option is built here.
 */
import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ConnectionOptions } from "node:tls";
import { ReplayableError } from "../errors.js";
import { registerSecret } from "../secrets.js";
import { unreadableFileReason } from "../unreadableFile.js";

/** libpq's `sslmode` values. */
export const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;
/** One of {@link SSL_MODES}. */
export type SslMode = (typeof SSL_MODES)[number];

/** What {@link postgresTls} makes of a URL: node-postgres's options. */
export interface PostgresTls {
  /** The URL without the TLS parameters (node-postgres must not apply its own reading of them). */
  readonly connectionString: string;
  /** node-postgres's `ssl`: false for plaintext, else the options of `tls.connect`. */
  readonly ssl: false | ConnectionOptions;
  /** libpq's `sslnegotiation` (`postgres` or `direct`), when given. */
  readonly sslnegotiation: "postgres" | "direct" | undefined;
  /** The effective mode: `disable` when the URL has none (see {@link postgresTls}). */
  readonly mode: SslMode;
  /** What the client verifies: nothing, the CA chain, or the chain and the host name. */
  readonly verifies: "nothing" | "chain" | "chain-and-host";
  /** The `sslrootcert` given (a file or `system`), for messages. */
  readonly rootCert: string | undefined;
}

/** The parameters read here, and the environment variable libpq reads each from when the URL lacks it. */
const PARAMETERS = {
  sslmode: "PGSSLMODE",
  sslrootcert: "PGSSLROOTCERT",
  sslcert: "PGSSLCERT",
  sslkey: "PGSSLKEY",
  sslpassword: undefined,
  sslcrl: "PGSSLCRL",
  sslminprotocolversion: "PGSSLMINPROTOCOLVERSION",
  sslmaxprotocolversion: "PGSSLMAXPROTOCOLVERSION",
  sslnegotiation: "PGSSLNEGOTIATION",
} as const;
type Parameter = keyof typeof PARAMETERS;

/** Parameters of libpq (or node-postgres) that are refused rather than silently ignored. */
const UNSUPPORTED: Record<string, string> = {
  ssl: "is node-postgres's own parameter; use libpq's sslmode, e.g. sslmode=verify-full&sslrootcert=<CA file>",
  uselibpqcompat: "is not needed: replayable always gives sslmode libpq's meaning; remove it",
  sslcrldir: "is not supported; give one file of CRLs with sslcrl",
  sslsni: "is not supported: the server name is always sent for a host name (never for an IP address)",
  sslcompression: "is not supported (TLS compression is disabled in every current TLS library)",
  sslcertmode: "is not supported; give sslcert and sslkey to send a client certificate",
  sslkeylogfile: "is not supported",
  gssencmode: "is not supported: node-postgres has no GSSAPI encryption",
};

const TLS_VERSIONS = ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"] as const;

/** Reads a file as text; injected by tests. @throws the fs error (ENOENT, EACCES, ...). */
export type ReadFile = (path: string) => string;

/**
 * The node-postgres options of `url` under libpq's TLS rules:
 * - no `sslmode`: plaintext (node-postgres's default, and replayable's so far). libpq's default,
 *   `prefer`, cannot be had: node-postgres has no fallback between TLS and plaintext. With
 *   `sslrootcert`, `sslcert` or `sslkey` but no `sslmode`, the mode is asked for.
 * - `disable`: plaintext. `allow`, `prefer`: refused (no fallback; they also give no protection
 *   against a man in the middle), naming `require`, `verify-full` and `disable`.
 * - `require`: TLS, the certificate not verified; with `sslrootcert` it is verified like
 *   `verify-ca` (libpq's rule).
 * - `verify-ca`: the chain up to `sslrootcert` is verified, not the host name.
 * - `verify-full`: the chain and the host name (or IP address) of the URL.
 * `verify-ca` and `verify-full` need `sslrootcert` (libpq falls back to ~/.postgresql/root.crt;
 * replayable asks for it). `sslrootcert=system` trusts Node's CA list (Mozilla's, plus
 * NODE_EXTRA_CA_CERTS) and, as in libpq 16, needs `verify-full`. `sslcert` and `sslkey` (a client
 * certificate) go together; `sslpassword` decrypts the key and is registered as a secret.
 * Each parameter may come from libpq's environment variable (PGSSLMODE, PGSSLROOTCERT, ...) when
 * the URL lacks it. Files are read now; their contents are never put in a message.
 * @throws ReplayableError CONFIG_INVALID naming DATABASE_URL, the parameter and the fix: an
 *   unknown mode, a refused mode or parameter, a missing or unreadable file.
 * @example postgresTls("postgres://app@db:5432/app?sslmode=verify-full&sslrootcert=/etc/ca.pem").ssl
 */
export function postgresTls(
  url: string,
  env: Record<string, string | undefined> = process.env,
  readFile: ReadFile = (path) => readFileSync(path, "utf8"),
): PostgresTls {
  const parsed = new URL(url);
  for (const name of parsed.searchParams.keys()) {
    const why = UNSUPPORTED[name];
    if (why !== undefined) throw problem(`${name} ${why}`);
  }
  const given = (p: Parameter): string | undefined => {
    const envName = PARAMETERS[p];
    const value = parsed.searchParams.get(p) ?? (envName === undefined ? undefined : env[envName]);
    return value === "" ? undefined : value;
  };
  const mode = sslMode(given("sslmode"), given);
  const stripped = new URL(url);
  for (const p of Object.keys(PARAMETERS)) stripped.searchParams.delete(p);
  const connectionString = stripped.search === parsed.search ? url : stripped.toString();
  const negotiation = given("sslnegotiation");
  if (negotiation !== undefined && negotiation !== "postgres" && negotiation !== "direct")
    throw problem(`sslnegotiation=${negotiation} must be postgres or direct`);
  if (negotiation === "direct" && mode === "disable")
    throw problem("sslnegotiation=direct needs sslmode=require, verify-ca or verify-full (libpq's rule)");
  const rootCert = given("sslrootcert");
  if (mode === "disable")
    return { connectionString, ssl: false, sslnegotiation: negotiation, mode, verifies: "nothing", rootCert };
  const verifies =
    mode === "verify-full" ? "chain-and-host" : mode === "verify-ca" || rootCert ? "chain" : "nothing";
  const ssl = tlsOptions(given, readFile, verifies);
  return { connectionString, ssl, sslnegotiation: negotiation, mode, verifies, rootCert };
}

/** The effective mode, or the problem with it. */
function sslMode(value: string | undefined, given: (p: Parameter) => string | undefined): SslMode {
  if (value === undefined) {
    const files = (["sslrootcert", "sslcert", "sslkey"] as const).filter((p) => given(p) !== undefined);
    if (files.length > 0)
      throw problem(
        `${files.join(" and ")} given without sslmode; add sslmode=verify-full (or verify-ca, require): without sslmode replayable connects without TLS`,
      );
    return "disable";
  }
  if (!(SSL_MODES as readonly string[]).includes(value))
    throw problem(`sslmode=${value} is not one of ${SSL_MODES.join(", ")}`);
  if (value === "allow" || value === "prefer")
    throw problem(
      `sslmode=${value} is not supported: node-postgres cannot fall back between TLS and plaintext as libpq does (and ${value} does not protect against a man in the middle); use sslmode=verify-full&sslrootcert=<CA file>, sslmode=require (encrypted, not verified) or sslmode=disable`,
    );
  const rootCert = given("sslrootcert");
  if ((value === "verify-ca" || value === "verify-full") && rootCert === undefined)
    throw problem(
      `sslmode=${value} needs sslrootcert=<file of the CA that signed the server's certificate> (or sslrootcert=system for a public CA, with verify-full)`,
    );
  if (rootCert === "system" && value !== "verify-full")
    throw problem(
      `sslmode=${value} may not be used with sslrootcert=system; use sslmode=verify-full (libpq's rule: any public CA's customer could pass a weaker check)`,
    );
  return value as SslMode;
}

/** The `tls.connect` options of a mode that encrypts. */
function tlsOptions(
  given: (p: Parameter) => string | undefined,
  readFile: ReadFile,
  verifies: PostgresTls["verifies"],
): ConnectionOptions {
  const ssl: ConnectionOptions = {
    rejectUnauthorized: verifies !== "nothing",
    minVersion: tlsVersion("sslminprotocolversion", given("sslminprotocolversion")) ?? "TLSv1.2",
  };
  const max = tlsVersion("sslmaxprotocolversion", given("sslmaxprotocolversion"));
  if (max !== undefined) ssl.maxVersion = max;
  if (verifies === "chain") ssl.checkServerIdentity = () => undefined;
  const rootCert = given("sslrootcert");
  if (rootCert !== undefined && rootCert !== "system")
    ssl.ca = pemFile(
      "sslrootcert",
      rootCert,
      readFile,
      "CERTIFICATE",
      "the CA certificate(s) that signed the server's certificate",
    );
  const cert = given("sslcert");
  const key = given("sslkey");
  if ((cert === undefined) !== (key === undefined))
    throw problem(
      `${cert === undefined ? "sslkey" : "sslcert"} given without ${cert === undefined ? "sslcert" : "sslkey"}; a client certificate needs both`,
    );
  if (cert !== undefined && key !== undefined) {
    ssl.cert = pemFile("sslcert", cert, readFile, "CERTIFICATE", "the client certificate");
    ssl.key = pemFile("sslkey", key, readFile, "PRIVATE KEY", "the client certificate's private key");
    const password = given("sslpassword");
    if (password !== undefined) {
      registerSecret(password);
      ssl.passphrase = password;
    }
    checkKey(ssl.key, key, password);
  }
  const crl = given("sslcrl");
  if (crl !== undefined)
    ssl.crl = pemFile("sslcrl", crl, readFile, "X509 CRL", "certificate revocation lists");
  return ssl;
}

/** @throws CONFIG_INVALID when the key cannot be read: encrypted without sslpassword, a wrong sslpassword, not a key. */
function checkKey(text: string, path: string, password: string | undefined): void {
  if (password === undefined && /ENCRYPTED/.test(text))
    throw problem(`sslkey=${path} is encrypted; give its password as sslpassword`);
  try {
    createPrivateKey({
      key: text,
      format: "pem",
      ...(password === undefined ? {} : { passphrase: password }),
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (password !== undefined && code === "ERR_OSSL_BAD_DECRYPT")
      throw problem(`sslkey=${path}: sslpassword does not decrypt it`);
    throw problem(`sslkey=${path}: not a usable private key (${String(code)})`);
  }
}

function tlsVersion(parameter: string, value: string | undefined): ConnectionOptions["minVersion"] {
  if (value === undefined) return undefined;
  if (!(TLS_VERSIONS as readonly string[]).includes(value))
    throw problem(`${parameter}=${value} must be one of ${TLS_VERSIONS.join(", ")}`);
  return value as ConnectionOptions["minVersion"];
}

/** A PEM file's text. @throws CONFIG_INVALID naming the parameter and the file, never its contents. */
function pemFile(parameter: string, path: string, readFile: ReadFile, label: string, what: string): string {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    const reason = unreadableFileReason(error);
    throw problem(`${parameter}=${path}: ${reason}; give the path of a PEM file with ${what}`);
  }
  if (!text.includes(`-----BEGIN `) || !text.includes(`${label}-----`))
    throw problem(
      `${parameter}=${path}: not a PEM file with ${what} (no "-----BEGIN ...${label}-----" line)`,
    );
  return text;
}

function problem(message: string): ReplayableError {
  return new ReplayableError("CONFIG_INVALID", `invalid configuration:\n  DATABASE_URL: ${message}`, {
    context: { variables: ["DATABASE_URL"] },
  });
}
