/**
 * Configuration: parsed once at start-up from environment variables (and CLI
 * flags, which win), validated with zod, and frozen. Every problem is reported
 * at once, each naming its variable and what would be valid, before any record
 * is read.
 */
import { z } from "zod";
import { ReplayableError } from "./errors.js";
import { registerEnvSecrets, registerUrlSecret } from "./secrets.js";

const HOST_PORT = /^[^\s:,]+:\d{1,5}$/;

const intFrom = (min: number, max: number, unit: string) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, { message: `must be a whole number of ${unit} from ${min} to ${max}` })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `must be at least ${min} ${unit}` })
        .max(max, { message: `must be at most ${max} ${unit}` }),
    );

const NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** Each environment variable, its default, and what it accepts. The README's "Configuration" table mirrors this. */
const schema = z.object({
  KAFKA_BROKERS: z
    .string()
    .default("127.0.0.1:9092")
    .transform((s) => s.split(",").map((b) => b.trim()))
    .pipe(
      z
        .array(z.string().regex(HOST_PORT, { message: "each broker must be host:port, e.g. 127.0.0.1:9092" }))
        .min(1),
    ),
  KAFKA_CLIENT_ID: z.string().min(1).default("replayable"),
  DATABASE_URL: z
    .string()
    .default("postgres://postgres@127.0.0.1:5432/test")
    .refine((s) => /^postgres(ql)?:\/\//.test(s), {
      message: "must be a postgres:// or postgresql:// URL, e.g. postgres://user@127.0.0.1:5432/db",
    }),
  REPLAYABLE_PROJECTION: z
    .string()
    .default("ledger")
    .refine((s) => NAME.test(s), { message: "must be a projection name: lower case letters, digits, _" }),
  REPLAYABLE_TOPICS: z
    .string()
    .default("")
    .transform((s) =>
      s
        .split(",")
        .map((t) => t.trim())
        .filter((t) => t.length > 0),
    )
    .pipe(
      z.array(
        z.string().regex(/^[a-zA-Z0-9._-]{1,249}$/, {
          message: "each topic name is 1-249 of a-z A-Z 0-9 . _ - (Kafka's legal topic characters)",
        }),
      ),
    ),
  REPLAYABLE_GROUP_ID: z.string().default(""),
  REPLAYABLE_PARTITIONS_CONCURRENTLY: intFrom(1, 1000, "partitions").default(3),
  REPLAYABLE_MAX_BATCH_RECORDS: intFrom(1, 100_000, "records").default(500),
  REPLAYABLE_MAX_BATCH_BYTES: intFrom(1024, 1_073_741_824, "bytes").default(1_048_576),
  REPLAYABLE_MAX_RECORD_BYTES: intFrom(1, 1_073_741_824, "bytes").default(1_048_576),
  REPLAYABLE_SESSION_TIMEOUT_MS: intFrom(6000, 1_800_000, "ms").default(30_000),
  REPLAYABLE_HEARTBEAT_INTERVAL_MS: intFrom(100, 600_000, "ms").default(3000),
  REPLAYABLE_SHUTDOWN_TIMEOUT_MS: intFrom(0, 3_600_000, "ms").default(30_000),
  REPLAYABLE_RETRY_INITIAL_MS: intFrom(1, 600_000, "ms").default(200),
  REPLAYABLE_RETRY_MAX_MS: intFrom(1, 3_600_000, "ms").default(30_000),
  REPLAYABLE_DB_POOL_SIZE: intFrom(1, 1000, "connections").default(10),
  REPLAYABLE_METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  REPLAYABLE_METRICS_PORT: intFrom(0, 65535, "port").default(9464),
  REPLAYABLE_PROGRESS_INTERVAL_MS: intFrom(0, 3_600_000, "ms").default(10_000),
  REPLAYABLE_LAG_REFRESH_MS: intFrom(100, 3_600_000, "ms").default(5000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/** The parsed, frozen configuration. Units are in the names (ms, bytes). */
export interface Config {
  readonly kafka: { readonly brokers: readonly string[]; readonly clientId: string };
  readonly databaseUrl: string;
  readonly projection: string;
  /** Topics to consume; empty means the projection's default topics. */
  readonly topics: readonly string[];
  /** Consumer group id; defaults to the projection name (DESIGN.md "Words"). */
  readonly groupId: string;
  readonly partitionsConsumedConcurrently: number;
  readonly maxBatchRecords: number;
  readonly maxBatchBytes: number;
  readonly maxRecordBytes: number;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly shutdownTimeoutMs: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  readonly dbPoolSize: number;
  readonly metrics: { readonly host: string; readonly port: number };
  /** How often `run` logs its rate and remaining lag, ms; 0 turns the progress line off. */
  readonly progressIntervalMs: number;
  /** How often the lag, checkpoint and commit-gap gauges are refreshed from Kafka and PostgreSQL, ms. */
  readonly lagRefreshMs: number;
  readonly logLevel: string;
}

/** The environment variable names {@link loadConfig} reads. */
export type ConfigVariable = keyof z.input<typeof schema>;

/**
 * Parses configuration from `env`, with `overrides` (CLI flags, keyed by variable name) taking precedence.
 * Registers the password of `DATABASE_URL` (and `PGPASSWORD`, `*_PASSWORD`, `*_SECRET` variables)
 * as secrets, so logs, errors and HTTP answers never show them (see secrets.ts).
 * @throws ReplayableError `CONFIG_INVALID` listing every invalid variable with what is valid.
 * @example loadConfig(process.env, { REPLAYABLE_GROUP_ID: "ledger-1" })
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<ConfigVariable, string | undefined>> = {},
): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = overrides[key as ConfigVariable] ?? env[key];
    if (value !== undefined && value !== "") input[key] = value;
  }
  registerEnvSecrets(env);
  if (input.DATABASE_URL !== undefined) registerUrlSecret(input.DATABASE_URL);
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? "config");
      const given = input[variable];
      return `  ${variable}${given === undefined ? "" : `=${redact(variable, given)}`}: ${issue.message}`;
    });
    throw new ReplayableError("CONFIG_INVALID", `invalid configuration:\n${problems.join("\n")}`, {
      context: { variables: parsed.error.issues.map((i) => String(i.path[0])) },
    });
  }
  const c = parsed.data;
  if (c.REPLAYABLE_HEARTBEAT_INTERVAL_MS * 3 > c.REPLAYABLE_SESSION_TIMEOUT_MS) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `invalid configuration:\n  REPLAYABLE_HEARTBEAT_INTERVAL_MS=${c.REPLAYABLE_HEARTBEAT_INTERVAL_MS}: must be at most a third of REPLAYABLE_SESSION_TIMEOUT_MS (${c.REPLAYABLE_SESSION_TIMEOUT_MS}), as Kafka's heartbeat.interval.ms docs advise`,
    );
  }
  return Object.freeze({
    kafka: Object.freeze({ brokers: Object.freeze(c.KAFKA_BROKERS), clientId: c.KAFKA_CLIENT_ID }),
    databaseUrl: c.DATABASE_URL,
    projection: c.REPLAYABLE_PROJECTION,
    topics: Object.freeze(c.REPLAYABLE_TOPICS),
    groupId: c.REPLAYABLE_GROUP_ID === "" ? c.REPLAYABLE_PROJECTION : c.REPLAYABLE_GROUP_ID,
    partitionsConsumedConcurrently: c.REPLAYABLE_PARTITIONS_CONCURRENTLY,
    maxBatchRecords: c.REPLAYABLE_MAX_BATCH_RECORDS,
    maxBatchBytes: c.REPLAYABLE_MAX_BATCH_BYTES,
    maxRecordBytes: c.REPLAYABLE_MAX_RECORD_BYTES,
    sessionTimeoutMs: c.REPLAYABLE_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: c.REPLAYABLE_HEARTBEAT_INTERVAL_MS,
    shutdownTimeoutMs: c.REPLAYABLE_SHUTDOWN_TIMEOUT_MS,
    retryInitialMs: c.REPLAYABLE_RETRY_INITIAL_MS,
    retryMaxMs: c.REPLAYABLE_RETRY_MAX_MS,
    dbPoolSize: c.REPLAYABLE_DB_POOL_SIZE,
    metrics: Object.freeze({ host: c.REPLAYABLE_METRICS_HOST, port: c.REPLAYABLE_METRICS_PORT }),
    progressIntervalMs: c.REPLAYABLE_PROGRESS_INTERVAL_MS,
    lagRefreshMs: c.REPLAYABLE_LAG_REFRESH_MS,
    logLevel: c.LOG_LEVEL,
  });
}

/**
 * Hides the password of a connection URL, for logs and error messages.
 * @example redactUrl("postgres://u:secret@h/db") === "postgres://u:***@h/db"
 */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*):[^@]*@/i, "$1:***@");
}

function redact(variable: string, value: string): string {
  return variable === "DATABASE_URL" ? redactUrl(value) : value;
}
