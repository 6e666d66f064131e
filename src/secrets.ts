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

/** Environment variables whose value is a secret even without being named in the config. */
const SECRET_VARIABLE = /(^PGPASSWORD$|_PASSWORD$|_SECRET$)/;

/** Userinfo with a password in any URL: `scheme://user:password@`. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@"']*):([^\s@/"']*)@/gi;

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
 * its `password` and `sslpassword` (libpq's key passphrase) query parameters.
 * Unparsable URLs register nothing; {@link scrubSecrets} still hides their userinfo.
 */
export function registerUrlSecret(url: string): void {
  try {
    const parsed = new URL(url);
    registerSecret(parsed.password);
    for (const name of ["password", "sslpassword"])
      registerSecret(parsed.searchParams.get(name) ?? undefined);
  } catch {
    const match = /^[a-z][a-z0-9+.-]*:\/\/[^:/@]*:([^@]*)@/i.exec(url);
    registerSecret(match?.[1]);
  }
}

/** Registers `PGPASSWORD` and every `*_PASSWORD` / `*_SECRET` variable of `env`. */
export function registerEnvSecrets(env: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(env)) if (SECRET_VARIABLE.test(name)) registerSecret(value);
}

/**
 * Hides secrets in `text`: the password of any `scheme://user:password@` URL becomes `***`, and
 * so does every occurrence of a registered secret (longest first, so a secret containing another
 * is hidden whole).
 * @example scrubSecrets("postgres://u:pw@h/db") === "postgres://u:***@h/db"
 */
export function scrubSecrets(text: string): string {
  let result = text.includes("://") ? text.replace(URL_PASSWORD, "$1:***@") : text;
  for (const secret of longestFirst) {
    if (result.includes(secret)) result = result.replaceAll(secret, "***");
  }
  return result;
}

/** Forgets every registered secret (tests only). */
export function clearSecrets(): void {
  secrets.clear();
  longestFirst = [];
}
