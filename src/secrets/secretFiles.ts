/**
 * Secrets from files: every secret setting NAME may instead be given as NAME_FILE, the path of a
 * file holding it (the Docker and Kubernetes secrets convention, as the official postgres image's
 * POSTGRES_PASSWORD_FILE). The file's trailing newlines are dropped; the value is registered as a
 * secret (secrets.ts) so no log, error or HTTP answer shows it.
 */
import { readFileSync } from "node:fs";
import { errorMessage } from "../errors.js";
import { registerSecret } from "./secrets.js";

/**
 * The settings whose values are secrets: never printed, each also readable from `<NAME>_FILE`.
 * A new secret setting is added here (and to the README's configuration table).
 */
export const SECRET_SETTINGS: readonly string[] = [
  "DATABASE_URL",
  "KAFKA_SASL_PASSWORD",
  "KAFKA_SSL_KEY_PASSWORD",
];

/** The `_FILE` variable of a secret setting, e.g. `KAFKA_SASL_PASSWORD_FILE`. */
export function fileVariable(name: string): string {
  return `${name}_FILE`;
}

/** What {@link readSecretFiles} found. */
export interface SecretFiles {
  /** Secret setting → its value read from the file. */
  readonly values: ReadonlyMap<string, string>;
  /** Secret setting → the `NAME_FILE=path` it came from, for problem lines. */
  readonly sources: ReadonlyMap<string, string>;
  /** One per bad `_FILE` variable, naming it and its path, never the content. */
  readonly problems: readonly { readonly variable: string; readonly message: string }[];
}

/**
 * Reads every `<NAME>_FILE` of {@link SECRET_SETTINGS} set in `env`. Both NAME and NAME_FILE set,
 * an unreadable file and an empty file are problems.
 * @example readSecretFiles({ KAFKA_SASL_PASSWORD_FILE: "/run/secrets/kafka" }).values.get("KAFKA_SASL_PASSWORD")
 */
export function readSecretFiles(env: Record<string, string | undefined>): SecretFiles {
  const values = new Map<string, string>();
  const sources = new Map<string, string>();
  const problems: { variable: string; message: string }[] = [];
  for (const name of SECRET_SETTINGS) {
    const variable = fileVariable(name);
    const path = env[variable];
    if (path === undefined || path === "") continue;
    if (env[name] !== undefined && env[name] !== "") {
      problems.push({
        variable,
        message: `and ${name} are both set; set only one (${variable} names a file holding ${name})`,
      });
      continue;
    }
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      // Node's fs messages name the path and the reason (ENOENT, EACCES, EISDIR), never content.
      problems.push({ variable, message: `cannot read ${path}: ${errorMessage(error)}` });
      continue;
    }
    const value = text.replace(/(\r?\n)+$/, "");
    registerSecret(value);
    if (value === "") {
      problems.push({ variable, message: `${path} is empty; it must hold the value of ${name}` });
      continue;
    }
    values.set(name, value);
    sources.set(name, `${variable}=${path}`);
  }
  return { values, sources, problems };
}
