/**
 * Connection failures that a retry will not fix, because the TLS settings or the credentials of
 * DATABASE_URL do not match the server's: each becomes a CONFIG_INVALID error (the CLI exits 2)
 * that says what to set. Sources: PostgreSQL's pg_hba.conf messages ("no pg_hba.conf entry for
 * host ..., no encryption", SQLSTATE 28000), node-postgres's "The server does not support SSL
 * connections", and Node's certificate verification codes (OpenSSL's X509_V_ERR_* names).
 */
import { ReplayableError, errorMessage, sqlState } from "../errors.js";
import { redactUrl } from "../config.js";

/** Node's codes for a server certificate not signed by a trusted CA. */
const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_CHAIN_TOO_LONG",
  "INVALID_CA",
]);
const EXPIRED = new Set(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID", "CERT_REVOKED"]);

/**
 * The CONFIG_INVALID error that explains `error` (a failed connection to the server of `url`), or
 * undefined when it is not a TLS or authentication mismatch (an outage, a bug: left as it is).
 * Searches the `cause` chain. Never quotes key contents or a password (the URL is redacted).
 */
export function explainConnectionError(
  error: unknown,
  url: string,
  env: Record<string, string | undefined> = process.env,
): ReplayableError | undefined {
  const found = causes(error)
    .map((e) => explain(e, sslModeSource(url, env)))
    .find((m) => m !== undefined);
  if (found === undefined) return undefined;
  return new ReplayableError(
    "CONFIG_INVALID",
    `cannot connect to PostgreSQL at ${redactUrl(url)} (DATABASE_URL, --database-url or the config file's databaseUrl): ${found}`,
    { cause: error, context: { variables: ["DATABASE_URL"] } },
  );
}

/**
 * Which setting gave the sslmode, for the messages: DATABASE_URL's own, or PGSSLMODE, which libpq's
 * rule (src/db/postgresTls.ts) reads when the URL has none.
 */
function sslModeSource(url: string, env: Record<string, string | undefined>): string {
  let inUrl = false;
  try {
    inUrl = new URL(url).searchParams.get("sslmode") !== null;
  } catch {
    // An unparsable URL fails elsewhere, naming DATABASE_URL.
  }
  return !inUrl && env.PGSSLMODE !== undefined && env.PGSSLMODE !== ""
    ? `PGSSLMODE=${env.PGSSLMODE} (read because DATABASE_URL has no sslmode)`
    : "DATABASE_URL's sslmode";
}

function explain(error: object, sslMode: string): string | undefined {
  const message = errorMessage(error);
  const code = (error as { code?: unknown }).code;
  const state = sqlState(error);
  if (state === "28000" && /no encryption/.test(message))
    return `the server accepts only TLS connections (${message}); add sslmode=verify-full&sslrootcert=<file of the CA that signed the server's certificate> to DATABASE_URL`;
  if (state === "28000" && /no pg_hba\.conf entry/.test(message))
    return `the server's pg_hba.conf admits no such connection (${message}); ask its administrator for a hostssl entry for this user, database and address`;
  if (state === "28000" && /certificate/i.test(message))
    return `the server wants a client certificate (${message}); add sslcert=<certificate file>&sslkey=<key file> to DATABASE_URL`;
  if (state === "3D000")
    return `${message}; create it (createdb, or CREATE DATABASE) or correct the database name in DATABASE_URL`;
  if (state === "28000" && /^role ".*" does not exist/.test(message))
    return `${message}; check the user of DATABASE_URL (a role the server has, with LOGIN)`;
  if (state === "28P01" || (state === "28000" && /authentication failed/.test(message)))
    return `${message}; check the user and password of DATABASE_URL`;
  if (message === "The server does not support SSL connections")
    return `the server does not accept TLS (ssl = off in its postgresql.conf) but ${sslMode} asks for it; turn ssl on at the server, or use sslmode=disable only on a network you trust`;
  if (typeof code !== "string") return undefined;
  if (UNTRUSTED.has(code))
    return `the server's certificate is not signed by a CA that DATABASE_URL trusts (${code}: ${message}); set sslrootcert=<file of the CA that signed it> (a managed PostgreSQL publishes its CA bundle), or sslmode=require to encrypt without verifying`;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID")
    return `the server's certificate does not name the host of DATABASE_URL (${message}); sslmode=verify-full checks the host name: connect by a name the certificate lists, or use sslmode=verify-ca to verify only the CA chain`;
  if (EXPIRED.has(code))
    return `the server's certificate is not valid now (${code}: ${message}); the server needs a renewed certificate`;
  if (/^ERR_SSL_.*(CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|UNKNOWN_CA|BAD_CERTIFICATE)/.test(code))
    return `the TLS handshake was refused (${code}: ${message}); if the server asks for a client certificate, add sslcert=<certificate file>&sslkey=<key file> to DATABASE_URL`;
  return undefined;
}

function causes(error: unknown): object[] {
  const chain: object[] = [];
  let current: unknown = error;
  while (typeof current === "object" && current !== null && chain.length < 10 && !chain.includes(current)) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

/** Node's codes for a server that does not answer at the address (refused, no such host, no route). */
const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * The error for a first connection that found no server at the address of `url`: a DATABASE error
 * (the CLI exits 1: a server that is starting may answer on the next try) naming the address and
 * where to correct it; undefined for any other failure.
 */
export function unreachableServer(error: unknown, url: string): ReplayableError | undefined {
  const found = causes(error).find((e) => {
    const code = (e as { code?: unknown }).code;
    return typeof code === "string" && UNREACHABLE.has(code);
  });
  if (found === undefined) return undefined;
  const code = (found as { code: string }).code;
  let at = "the host and port";
  try {
    const parsed = new URL(url);
    at = `${parsed.hostname || "localhost"}:${parsed.port || "5432"}`;
  } catch {
    // An unparsable URL fails elsewhere, naming DATABASE_URL.
  }
  return new ReplayableError(
    "DATABASE",
    `no PostgreSQL server answers at ${at} (${code}: ${errorMessage(found)}), the address of DATABASE_URL (or --database-url, or the config file's databaseUrl): start the server, or correct the host and port`,
    { cause: error, context: { variables: ["DATABASE_URL"] } },
  );
}
