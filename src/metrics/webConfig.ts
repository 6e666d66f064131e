/**
 * The metrics endpoint's web configuration file (REPLAYABLE_METRICS_WEB_CONFIG_FILE), in the
 * format of the Prometheus exporters' web configuration (prometheus/exporter-toolkit,
 * docs/web-configuration.md): `tls_server_config` (HTTPS, optional client certificates),
 * `http_server_config.headers`, `basic_auth_users` (bcrypt hashes). Read and validated once, at
 * start-up; unknown keys and options replayable does not implement are errors naming the key.
 */
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ReplayableError } from "../errors.js";
import { closest } from "../text/suggest.js";
import { unreadableFileReason } from "../secrets/unreadableFile.js";

/** The setting that names the file. */
export const WEB_CONFIG_SETTING = "REPLAYABLE_METRICS_WEB_CONFIG_FILE";

/** exporter-toolkit's `client_auth_type` values (Go's tls.ClientAuthType names). */
export const CLIENT_AUTH_TYPES = [
  "NoClientCert",
  "RequestClientCert",
  "RequireAnyClientCert",
  "VerifyClientCertIfGiven",
  "RequireAndVerifyClientCert",
] as const;
/** One of {@link CLIENT_AUTH_TYPES}. */
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

const TLS_VERSIONS = { TLS10: "TLSv1", TLS11: "TLSv1.1", TLS12: "TLSv1.2", TLS13: "TLSv1.3" } as const;
type TlsVersionName = keyof typeof TLS_VERSIONS;
const HEADERS = [
  "Content-Security-Policy",
  "X-Frame-Options",
  "X-Content-Type-Options",
  "X-XSS-Protection",
  "Strict-Transport-Security",
] as const;
/** bcrypt's modular crypt format: $2a$, $2b$ or $2y$, a two-digit cost, 53 characters of salt and hash. */
const BCRYPT = /^\$2[aby]?\$\d{2}\$[./A-Za-z0-9]{53}$/;

/** Options of exporter-toolkit that replayable does not implement, and what to do instead. */
const UNSUPPORTED: Record<string, string> = {
  "tls_server_config.client_allowed_sans":
    "is not supported; use client_auth_type: RequireAndVerifyClientCert with a client CA of your own",
  "tls_server_config.cipher_suites":
    "is not supported (Go's cipher suite names); Node uses OpenSSL's defaults",
  "tls_server_config.curve_preferences": "is not supported (Go's curve names); Node uses OpenSSL's defaults",
  rate_limit: "is not supported; put a reverse proxy in front to limit requests",
};

const unknownSupported = z.unknown().optional();
const versionName = z.enum(Object.keys(TLS_VERSIONS) as [TlsVersionName, ...TlsVersionName[]], {
  message: `must be one of ${Object.keys(TLS_VERSIONS).join(", ")}`,
});
const schema = z.strictObject({
  tls_server_config: z
    .strictObject({
      cert: z.string().optional(),
      key: z.string().optional(),
      client_ca: z.string().optional(),
      cert_file: z.string().optional(),
      key_file: z.string().optional(),
      client_ca_file: z.string().optional(),
      client_auth_type: z
        .enum(CLIENT_AUTH_TYPES, { message: `must be one of ${CLIENT_AUTH_TYPES.join(", ")}` })
        .default("NoClientCert"),
      min_version: versionName.default("TLS12"),
      max_version: versionName.default("TLS13"),
      prefer_server_cipher_suites: z.boolean({ message: "must be true or false" }).default(true),
      client_allowed_sans: unknownSupported,
      cipher_suites: unknownSupported,
      curve_preferences: unknownSupported,
    })
    .optional(),
  http_server_config: z
    .strictObject({
      http2: z.boolean({ message: "must be true or false" }).optional(),
      headers: z.partialRecord(z.enum(HEADERS), z.string()).optional(),
    })
    .optional(),
  basic_auth_users: z
    .record(
      z.string().min(1, { message: "a user name must not be empty" }),
      z.string().regex(BCRYPT, {
        message: "must be a bcrypt hash ($2y$10$...), e.g. from `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
      }),
    )
    .nullish(),
  rate_limit: unknownSupported,
});

/** The keys each object of the file takes, by its path ("" for the top), for "did you mean". */
const KNOWN_KEYS: Readonly<Record<string, readonly string[]>> = {
  "": Object.keys(schema.shape),
  tls_server_config: Object.keys(schema.shape.tls_server_config.unwrap().shape),
  http_server_config: Object.keys(schema.shape.http_server_config.unwrap().shape),
  "http_server_config.headers": HEADERS,
};

/** The TLS settings, as node:tls takes them. */
export interface WebTls {
  readonly cert: string;
  readonly key: string;
  /** The CA of client certificates, when client_ca or client_ca_file is given. */
  readonly clientCa: string | undefined;
  readonly clientAuth: ClientAuthType;
  readonly minVersion: "TLSv1" | "TLSv1.1" | "TLSv1.2" | "TLSv1.3";
  readonly maxVersion: "TLSv1" | "TLSv1.1" | "TLSv1.2" | "TLSv1.3";
  readonly honorCipherOrder: boolean;
}

/** A validated web configuration. */
export interface WebConfig {
  /** HTTPS settings; undefined: plain HTTP. */
  readonly tls: WebTls | undefined;
  /** User name → bcrypt hash; empty: no authentication. */
  readonly users: ReadonlyMap<string, string>;
  /** Headers added to every answer. */
  readonly headers: Readonly<Record<string, string>>;
}

/** Reads a file as text; injected by tests. @throws the fs error. */
export type ReadFile = (path: string) => string;

/**
 * Reads and validates the web configuration file at `path`; undefined when `path` is undefined
 * (plain HTTP, no authentication). Files it names (cert_file, key_file, client_ca_file) are read
 * now, relative to the working directory.
 * @throws ReplayableError CONFIG_INVALID naming REPLAYABLE_METRICS_WEB_CONFIG_FILE and each
 *   problem's key (never a file's contents or a hash).
 * @example loadWebConfig("/etc/replayable/web.yml")?.users.size
 */
export function loadWebConfig(
  path: string | undefined,
  readFile: ReadFile = (p) => readFileSync(p, "utf8"),
): WebConfig | undefined {
  if (path === undefined) return undefined;
  const fail = (problems: readonly string[]) =>
    new ReplayableError(
      "CONFIG_INVALID",
      `invalid configuration:\n${problems.map((p) => `  ${WEB_CONFIG_SETTING}=${path}: ${p}`).join("\n")}`,
      { context: { variables: [WEB_CONFIG_SETTING] } },
    );
  const text = readText(readFile, path, "the file", fail);
  let document: unknown;
  try {
    document = parseYaml(text) ?? {};
  } catch (error) {
    const line = (error as { linePos?: { line: number }[] }).linePos?.[0]?.line;
    throw fail([`is not valid YAML${line === undefined ? "" : ` (line ${line})`}`]);
  }
  const parsed = schema.safeParse(document);
  if (!parsed.success) throw fail(parsed.error.issues.map(describeIssue));
  const problems = unsupported(parsed.data);
  if (problems.length > 0) throw fail(problems);
  return {
    tls: webTls(parsed.data.tls_server_config, readFile, fail),
    users: new Map(Object.entries(parsed.data.basic_auth_users ?? {})),
    headers: Object.fromEntries(
      Object.entries(parsed.data.http_server_config?.headers ?? {}).filter(
        ([, v]) => v !== undefined && v !== "",
      ),
    ),
  };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const at = issue.path.join(".");
  if (issue.code === "unrecognized_keys") {
    const where = at === "" ? "" : `${at}.`;
    const known = KNOWN_KEYS[at] ?? [];
    return issue.keys
      .map((k) => {
        const suggestion = closest(k, known);
        const hint = suggestion === undefined ? "" : `; did you mean ${suggestion}?`;
        return `${where}${k}: unknown key${hint} (see docs/security.md "Metrics endpoint")`;
      })
      .join("; ");
  }
  return `${at === "" ? "the file" : at}: ${issue.message}`;
}

function unsupported(data: z.output<typeof schema>): string[] {
  const given: Record<string, unknown> = {
    "tls_server_config.client_allowed_sans": data.tls_server_config?.client_allowed_sans,
    "tls_server_config.cipher_suites": data.tls_server_config?.cipher_suites,
    "tls_server_config.curve_preferences": data.tls_server_config?.curve_preferences,
    rate_limit: data.rate_limit,
  };
  return Object.entries(given)
    .filter(([, value]) => value !== undefined && value !== null)
    .map(([key]) => `${key} ${UNSUPPORTED[key]}`);
}

type Fail = (problems: readonly string[]) => ReplayableError;

function webTls(
  tls: z.output<typeof schema>["tls_server_config"],
  readFile: ReadFile,
  fail: Fail,
): WebTls | undefined {
  if (tls === undefined) return undefined;
  const problems: string[] = [];
  const pem = (inline: string | undefined, file: string | undefined, key: string, required: boolean) => {
    if (inline !== undefined && file !== undefined)
      problems.push(`tls_server_config: give ${key} or ${key}_file, not both`);
    else if (inline === undefined && file === undefined && required)
      problems.push(
        `tls_server_config.${key}_file: missing; give the PEM file of the server's ${key === "cert" ? "certificate" : "private key"}`,
      );
    return (
      inline ??
      (file === undefined ? undefined : readText(readFile, file, `tls_server_config.${key}_file`, fail))
    );
  };
  const cert = pem(tls.cert, tls.cert_file, "cert", true);
  const key = pem(tls.key, tls.key_file, "key", true);
  const clientCa = pem(tls.client_ca, tls.client_ca_file, "client_ca", false);
  const verifies =
    tls.client_auth_type === "VerifyClientCertIfGiven" ||
    tls.client_auth_type === "RequireAndVerifyClientCert";
  if (clientCa !== undefined && !verifies)
    problems.push(
      `tls_server_config.client_ca_file: given, but client_auth_type ${tls.client_auth_type} does not verify client certificates; use RequireAndVerifyClientCert`,
    );
  if (clientCa === undefined && verifies)
    problems.push(
      `tls_server_config.client_auth_type: ${tls.client_auth_type} needs client_ca_file (the CA of the client certificates)`,
    );
  const min = TLS_VERSIONS[tls.min_version];
  const max = TLS_VERSIONS[tls.max_version];
  if (tls.min_version > tls.max_version)
    problems.push(
      `tls_server_config.min_version: ${tls.min_version} is above max_version ${tls.max_version}`,
    );
  if (problems.length > 0 || cert === undefined || key === undefined) throw fail(problems);
  try {
    createSecureContext({ cert, key, ...(clientCa === undefined ? {} : { ca: clientCa }) });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw fail([
      `tls_server_config: the certificate, key or client CA is not usable PEM, or the key does not match the certificate (${String(code)})`,
    ]);
  }
  return {
    cert,
    key,
    clientCa,
    clientAuth: tls.client_auth_type,
    minVersion: min,
    maxVersion: max,
    honorCipherOrder: tls.prefer_server_cipher_suites,
  };
}

function readText(readFile: ReadFile, path: string, what: string, fail: Fail): string {
  try {
    return readFile(path);
  } catch (error) {
    const reason = unreadableFileReason(error);
    throw fail([`${what}${what === "the file" ? "" : ` ${path}`}: ${reason}`]);
  }
}
