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
import { registerSecret } from "../secrets/secrets.js";
import { unreadableFileReason } from "../secrets/unreadableFile.js";

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

/**
 * The parameters of one URL and environment: each one's value, and where it came from, so that a
 * problem names the setting to change: `sslmode=prefer` of DATABASE_URL, or `PGSSLMODE=prefer`
 * when libpq's variable gave it.
 */
interface Given {
  /** The parameter's value, from the URL, else from its environment variable; an empty one is none. */
  value(p: Parameter): string | undefined;
  /** How messages call it: `sslmode` when the URL gave it, `PGSSLMODE` when the environment did. */
  name(p: Parameter): string;
  /** The setting it came from: `DATABASE_URL`, or its libpq variable. */
  variable(p: Parameter): string;
}

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
  const fromEnv = (p: Parameter): boolean => {
    const envName = PARAMETERS[p];
    return parsed.searchParams.get(p) === null && envName !== undefined && env[envName] !== undefined;
  };
  const given: Given = {
    value: (p) => {
      const envName = PARAMETERS[p];
      const value = parsed.searchParams.get(p) ?? (envName === undefined ? undefined : env[envName]);
      return value === "" ? undefined : value;
    },
    name: (p) => (fromEnv(p) ? PARAMETERS[p]! : p),
    variable: (p) => (fromEnv(p) ? PARAMETERS[p]! : "DATABASE_URL"),
  };
  const mode = sslMode(given);
  const stripped = new URL(url);
  for (const p of Object.keys(PARAMETERS)) stripped.searchParams.delete(p);
  const connectionString = stripped.search === parsed.search ? url : stripped.toString();
  const negotiation = given.value("sslnegotiation");
  const negotiationName = given.name("sslnegotiation");
  if (negotiation !== undefined && negotiation !== "postgres" && negotiation !== "direct")
    throw problem(`${negotiationName}=${negotiation} must be postgres or direct`, given, "sslnegotiation");
  if (negotiation === "direct" && mode === "disable")
    throw problem(
      `${negotiationName}=direct needs sslmode=require, verify-ca or verify-full (libpq's rule)`,
      given,
      "sslnegotiation",
    );
  const rootCert = given.value("sslrootcert");
  if (mode === "disable")
    return { connectionString, ssl: false, sslnegotiation: negotiation, mode, verifies: "nothing", rootCert };
  const verifies =
    mode === "verify-full" ? "chain-and-host" : mode === "verify-ca" || rootCert ? "chain" : "nothing";
  const ssl = tlsOptions(given, readFile, verifies);
  return { connectionString, ssl, sslnegotiation: negotiation, mode, verifies, rootCert };
}

/** The effective mode, or the problem with it (naming PGSSLMODE when it gave the mode). */
function sslMode(given: Given): SslMode {
  const value = given.value("sslmode");
  if (value === undefined) {
    const files = (["sslrootcert", "sslcert", "sslkey"] as const).filter((p) => given.value(p) !== undefined);
    if (files.length > 0)
      throw problem(
        `${files.map((p) => given.name(p)).join(" and ")} given without sslmode; add sslmode=verify-full (or verify-ca, require): without sslmode replayable connects without TLS`,
        given,
        ...files,
      );
    return "disable";
  }
  const mode = `${given.name("sslmode")}=${value}`;
  const fromEnv = given.variable("sslmode") !== "DATABASE_URL";
  const where = fromEnv
    ? ", as PGSSLMODE or in DATABASE_URL (PGSSLMODE is read because DATABASE_URL has no sslmode)"
    : "";
  if (!(SSL_MODES as readonly string[]).includes(value))
    throw problem(`${mode} is not one of ${SSL_MODES.join(", ")}`, given, "sslmode");
  if (value === "allow" || value === "prefer")
    throw problem(
      `${mode} is not supported: node-postgres cannot fall back between TLS and plaintext as libpq does (and ${value} does not protect against a man in the middle); use sslmode=verify-full&sslrootcert=<CA file>, sslmode=require (encrypted, not verified) or sslmode=disable${where}`,
      given,
      "sslmode",
    );
  const rootCert = given.value("sslrootcert");
  if ((value === "verify-ca" || value === "verify-full") && rootCert === undefined)
    throw problem(
      `${mode} needs sslrootcert=<file of the CA that signed the server's certificate> (or sslrootcert=system for a public CA, with verify-full)`,
      given,
      "sslmode",
    );
  if (rootCert === "system" && value !== "verify-full")
    throw problem(
      `${mode} may not be used with ${given.name("sslrootcert")}=system; use sslmode=verify-full (libpq's rule: any public CA's customer could pass a weaker check)`,
      given,
      "sslmode",
      "sslrootcert",
    );
  return value as SslMode;
}

/** The `tls.connect` options of a mode that encrypts. */
function tlsOptions(given: Given, readFile: ReadFile, verifies: PostgresTls["verifies"]): ConnectionOptions {
  const ssl: ConnectionOptions = {
    rejectUnauthorized: verifies !== "nothing",
    minVersion: tlsVersion(given, "sslminprotocolversion") ?? "TLSv1.2",
  };
  const max = tlsVersion(given, "sslmaxprotocolversion");
  if (max !== undefined) ssl.maxVersion = max;
  if (verifies === "chain") ssl.checkServerIdentity = () => undefined;
  const rootCert = given.value("sslrootcert");
  if (rootCert !== undefined && rootCert !== "system")
    ssl.ca = pemFile(
      given,
      "sslrootcert",
      readFile,
      "CERTIFICATE",
      "the CA certificate(s) that signed the server's certificate",
    );
  const cert = given.value("sslcert");
  const key = given.value("sslkey");
  if ((cert === undefined) !== (key === undefined)) {
    const [has, lacks] =
      cert === undefined ? (["sslkey", "sslcert"] as const) : (["sslcert", "sslkey"] as const);
    throw problem(`${given.name(has)} given without ${lacks}; a client certificate needs both`, given, has);
  }
  if (cert !== undefined && key !== undefined) {
    ssl.cert = pemFile(given, "sslcert", readFile, "CERTIFICATE", "the client certificate");
    ssl.key = pemFile(given, "sslkey", readFile, "PRIVATE KEY", "the client certificate's private key");
    const password = given.value("sslpassword");
    if (password !== undefined) {
      registerSecret(password);
      ssl.passphrase = password;
    }
    checkKey(ssl.key, given, password);
  }
  const crl = given.value("sslcrl");
  if (crl !== undefined)
    ssl.crl = pemFile(given, "sslcrl", readFile, "X509 CRL", "certificate revocation lists");
  return ssl;
}

/** @throws CONFIG_INVALID when the key cannot be read: encrypted without sslpassword, a wrong sslpassword, not a key. */
function checkKey(text: string, given: Given, password: string | undefined): void {
  const named = `${given.name("sslkey")}=${given.value("sslkey") ?? ""}`;
  if (password === undefined && /ENCRYPTED/.test(text))
    throw problem(`${named} is encrypted; give its password as sslpassword`, given, "sslkey");
  try {
    createPrivateKey({
      key: text,
      format: "pem",
      ...(password === undefined ? {} : { passphrase: password }),
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (password !== undefined && code === "ERR_OSSL_BAD_DECRYPT")
      throw problem(`${named}: sslpassword does not decrypt it`, given, "sslkey", "sslpassword");
    throw problem(`${named}: not a usable private key (${String(code)})`, given, "sslkey");
  }
}

function tlsVersion(
  given: Given,
  parameter: "sslminprotocolversion" | "sslmaxprotocolversion",
): ConnectionOptions["minVersion"] {
  const value = given.value(parameter);
  if (value === undefined) return undefined;
  if (!(TLS_VERSIONS as readonly string[]).includes(value))
    throw problem(
      `${given.name(parameter)}=${value} must be one of ${TLS_VERSIONS.join(", ")}`,
      given,
      parameter,
    );
  return value as ConnectionOptions["minVersion"];
}

/** A PEM file's text. @throws CONFIG_INVALID naming the parameter and the file, never its contents. */
function pemFile(
  given: Given,
  parameter: "sslrootcert" | "sslcert" | "sslkey" | "sslcrl",
  readFile: ReadFile,
  label: string,
  what: string,
): string {
  const path = given.value(parameter) ?? "";
  const named = `${given.name(parameter)}=${path}`;
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    const reason = unreadableFileReason(error);
    throw problem(`${named}: ${reason}; give the path of a PEM file with ${what}`, given, parameter);
  }
  if (!text.includes(`-----BEGIN `) || !text.includes(`${label}-----`))
    throw problem(
      `${named}: not a PEM file with ${what} (no "-----BEGIN ...${label}-----" line)`,
      given,
      parameter,
    );
  return text;
}

/**
 * The CONFIG_INVALID error of `message`, under the settings the `parameters` came from: DATABASE_URL,
 * or the libpq variable (PGSSLMODE, ...) that gave a parameter the URL lacks. Without `given`: DATABASE_URL.
 */
function problem(message: string, given?: Given, ...parameters: Parameter[]): ReplayableError {
  const variables = [
    ...new Set(given === undefined ? ["DATABASE_URL"] : parameters.map((p) => given.variable(p))),
  ];
  if (variables.length === 0) variables.push("DATABASE_URL");
  return new ReplayableError(
    "CONFIG_INVALID",
    `invalid configuration:\n  ${variables.join(", ")}: ${message}`,
    {
      context: { variables },
    },
  );
}
