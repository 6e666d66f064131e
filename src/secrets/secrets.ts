/**
 * Values that must never be printed: the password of `DATABASE_URL`, `PGPASSWORD`, SASL
 * credentials. The logger's destination, the CLI's error printer and the HTTP endpoints pass
 * every line through {@link scrubSecrets}, so a secret is hidden even when a library echoes it
 * in an error message or a config dump we did not anticipate. Structured redaction in the
 * logger (field names such as `password`) is the first line of defence; this is the last.
 */

/** Every registered secret, in the forms it may appear in text (raw, percent-decoded, JSON-escaped). */
const secrets = new Set<string>();
/** {@link secrets}, longest first, so a secret containing another is hidden whole. */
let longestFirst: string[] = [];

/**
 * Environment variables whose value is a secret of this process: libpq's PGPASSWORD and the
 * settings that hold one (src/secrets/secretFiles.ts registers their NAME_FILE forms). Another program's
 * `APP_SECRET=0` or `POSTGRES_PASSWORD=postgres` is not ours to hide: hiding it would garble every
 * line that holds a 0 or the word postgres.
 */
const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  "PGPASSWORD",
  "KAFKA_SASL_PASSWORD",
  "KAFKA_SSL_KEY_PASSWORD",
]);

/**
 * Userinfo with a password in any URL in free text: `scheme://user:password@`. The password runs
 * to the last `@` before the next whitespace or unescaped `"`, so reserved characters in it
 * (`/`, `?`, `#`, `@`, `'`, ...; generated and base64 passwords hold them unencoded) never leave
 * its tail shown. An `@` later in the same word (in a query) is hidden too: more hidden, never less.
 */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@"']*):((?:[^\s"\\]|\\.)*)@/gi;

/** `scheme://user:` at the start of a connection URL: where its password starts. */
const USERINFO_START = /^[a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:/i;

/**
 * Whether the last `@` of `url` lies in a query parameter's value (`?k=a@b`, `&k=a@b`) of the query
 * starting at index `query`: its `&`-separated segment has a `=` before it. Otherwise (`?More@host`)
 * the `?` belongs to a password holding `@` and `?` unencoded, which parses as a shorter password
 * and another host.
 */
function lastAtIsInParameter(url: string, query: number): boolean {
  const at = url.lastIndexOf("@");
  if (at < query) return true;
  const segmentStart = Math.max(url.lastIndexOf("&", at), query) + 1;
  return url.slice(segmentStart, at).includes("=");
}

/**
 * Where the password of connection URL `url` lies (`[start, end)`), or undefined without one.
 * Redaction by position, not by parsing: a password holding `/`, `?` or `#` makes the URL
 * unparseable (or parse with another host), so the password runs from after `scheme://user:` to
 * the last `@` of the URL. Only when the URL parses with a password (a well-formed URL) and that
 * last `@` lies in a query parameter's value (e.g. `?application_name=a@b`) is it left out: then
 * the password runs to the last `@` before the query.
 */
export function urlPasswordSpan(url: string): { start: number; end: number } | undefined {
  const start = USERINFO_START.exec(url)?.[0].length;
  if (start === undefined) return undefined;
  let limit = url.length;
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") {
      const query = url.indexOf("?", url.indexOf("@", start));
      if (query >= 0 && lastAtIsInParameter(url, query)) limit = query;
    }
  } catch {
    // not a URL: the password runs to the last @
  }
  const end = url.lastIndexOf("@", limit - 1);
  return end >= start ? { start, end } : undefined;
}

/**
 * `url` with the password of its userinfo replaced by `***` ({@link urlPasswordSpan}); the query's
 * `password` and `sslpassword` parameters are left to the caller.
 * @example redactUrlPassword("postgres://u:a/b?c@h/db") === "postgres://u:***@h/db"
 */
export function redactUrlPassword(url: string): string {
  const span = urlPasswordSpan(url);
  return span === undefined ? url : `${url.slice(0, span.start)}***${url.slice(span.end)}`;
}

/** libpq's `password` and `sslpassword` parameters in a URL's query, as written (percent-encoded). */
const QUERY_PASSWORD = /([?&](?:ssl)?password=)[^&#\s"']*/gi;

/**
 * Registers `value` (if non-empty) as a secret for {@link scrubSecrets}, with its
 * percent-decoded and JSON-escaped forms. Process-wide: the process has one set of credentials.
 */
export function registerSecret(value: string | undefined): void {
  if (value === undefined || value === "") return;
  const plain = [value];
  try {
    plain.push(decodeURIComponent(value));
  } catch {
    // not percent-encoded: the raw form is enough
  }
  for (const form of plain) {
    secrets.add(form);
    secrets.add(JSON.stringify(form).slice(1, -1));
  }
  secrets.delete("");
  longestFirst = [...secrets].sort((a, b) => b.length - a.length);
}

/**
 * Registers the password of a connection URL (`postgres://user:password@host/db`), if any, and
 * its `password` and `sslpassword` (libpq's key passphrase) query parameters, each as written
 * (percent-encoded, `+` for a space) and decoded. The password is found by position
 * ({@link urlPasswordSpan}), so one holding unencoded `@`, `/`, `?` or `#` is registered whole, also
 * in a URL that does not parse.
 */
export function registerUrlSecret(url: string): void {
  const span = urlPasswordSpan(url);
  if (span !== undefined) registerSecret(url.slice(span.start, span.end));
  else {
    // Where the password was found by position, the parsed one is that or only its head (a
    // password holding `@` and `?` or `#` unencoded): registering the head would hide every
    // occurrence of a short prefix such as "a" in every line.
    try {
      registerSecret(new URL(url).password);
    } catch {
      // not a URL and no password by position: nothing to register
    }
  }
  for (const match of url.matchAll(QUERY_PASSWORD)) {
    const written = match[0].slice(match[1]!.length);
    registerSecret(written);
    registerSecret(written.replaceAll("+", " "));
    registerSecret(safeDecode(written.replaceAll("+", " ")));
  }
}

/** `decodeURIComponent`, or the text itself when it is not percent-encoded. */
function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Registers the values of {@link SECRET_VARIABLES} in `env`. */
export function registerEnvSecrets(env: Record<string, string | undefined>): void {
  for (const name of SECRET_VARIABLES) registerSecret(env[name]);
}

/**
 * Hides secrets in `text`: the password of any `scheme://user:password@` URL becomes `***`, and
 * so does every occurrence of a registered secret (longest first, so a secret containing another
 * is hidden whole).
 * @example scrubSecrets("postgres://u:pw@h/db") === "postgres://u:***@h/db"
 */
export function scrubSecrets(text: string): string {
  let result = text.includes("://") ? text.replace(URL_PASSWORD, "$1:***@") : text;
  if (/password=/i.test(result)) result = result.replace(QUERY_PASSWORD, "$1***");
  for (const secret of longestFirst) {
    if (result.includes(secret)) result = result.replaceAll(secret, "***");
  }
  return result;
}

/**
 * {@link scrubSecrets} for one serialized log line: a JSON object keeps being valid JSON, because
 * only its string values are scrubbed (a short secret such as `30` would otherwise turn
 * `"level":30` into `"level":***`). Any other line is scrubbed as text. The line's ending is kept.
 */
export function scrubLogLine(line: string): string {
  const scrubbed = scrubSecrets(line);
  if (scrubbed === line || !line.startsWith("{")) return scrubbed;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return scrubbed;
  }
  const ending = line.endsWith("\n") ? "\n" : "";
  return (
    JSON.stringify(parsed, (_key, value: unknown) =>
      typeof value === "string" ? scrubSecrets(value) : value,
    ) + ending
  );
}

/** Forgets every registered secret (tests only). */
export function clearSecrets(): void {
  secrets.clear();
  longestFirst = [];
}
