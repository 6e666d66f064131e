/**
 * Configuration: parsed once at start-up from environment variables (and CLI
 * flags, which win), validated with zod, and frozen. Every problem is reported
 * at once, each naming its variable and what would be valid, before any record
 * is read.
 */
import { totalmem } from "node:os";
import { z } from "zod";
import { ReplayableError } from "./errors.js";
import {
  SASL_MECHANISMS,
  SECURITY_PROTOCOLS,
  type KafkaSecurity,
  type OauthBearerProvider,
} from "./kafka/securityConfig.js";
import { LOG_FORMATS, type LogFormat } from "./logger.js";
import { DEFAULT_MAX_RECORD_HEADERS } from "./record.js";
import { readPemFiles, type SettingProblem } from "./secrets/pemFiles.js";
import { fileVariable, readSecretFiles, SECRET_SETTINGS } from "./secrets/secretFiles.js";
import {
  redactUrlPassword,
  registerEnvSecrets,
  registerSecret,
  registerUrlSecret,
} from "./secrets/secrets.js";
import { closest } from "./text/suggest.js";

/** The Kafka clients a member's feed can run on (KAFKA_CLIENT); KafkaJS is the default. */
export const KAFKA_CLIENTS = ["kafkajs", "platformatic"] as const;
/** One of {@link KAFKA_CLIENTS}. */
export type KafkaClient = (typeof KAFKA_CLIENTS)[number];
/** The consumer group protocols (KAFKA_GROUP_PROTOCOL): classic, or KIP-848's consumer protocol. */
export const GROUP_PROTOCOLS = ["classic", "consumer"] as const;
/** One of {@link GROUP_PROTOCOLS}. */
export type GroupProtocol = (typeof GROUP_PROTOCOLS)[number];

const HOST_PORT = /^[^\s:,]+:\d{1,5}$/;
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;
const notBlank = { message: "must not be blank" };

/** A whole number in [min, max]; `unit` (ms, bytes, ...) is named in the messages, "" for none. */
const intFrom = (min: number, max: number, unit: string) => {
  const of = unit === "" ? "" : ` of ${unit}`;
  // "at least 1 record", "at most 1000 connections" (a unit is plural, "ms" aside).
  const suffix = (n: number) =>
    unit === "" ? "" : ` ${n === 1 && unit.endsWith("s") && unit !== "ms" ? unit.slice(0, -1) : unit}`;
  return z
    .string()
    .trim()
    .regex(/^\d+$/, { message: `must be a whole number${of} from ${min} to ${max}` })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `must be at least ${min}${suffix(min)}` })
        .max(max, { message: `must be at most ${max}${suffix(max)}` }),
    );
};

const NAME = /^[a-z][a-z0-9_]{0,62}$/;
const MIB = 1_048_576;

/**
 * REPLAYABLE_MEMORY_BUDGET_BYTES's default for a process that may use `limitBytes` of memory:
 * a quarter of it, rounded down to a whole MiB, at least 16 MiB and at most 128 MiB. Under a
 * 512 MiB container limit that is 128 MiB: `make bench` measured a peak RSS of 137 to 214 MB in
 * every shape, and against the former fixed 32 MiB 25 to 80% more records/s and 8 to 23% less
 * Node CPU per record while applying, from larger fetches and transactions (docs/benchmarks.md
 * "A memory budget that follows the memory limit"); under a 256 MiB limit it is 64 MiB.
 * @param limitBytes the memory the process may use, bytes ({@link processMemoryLimit}).
 */
export function defaultMemoryBudget(limitBytes: number): number {
  const quarter = Math.floor(limitBytes / 4 / MIB) * MIB;
  return Math.min(128 * MIB, Math.max(16 * MIB, quarter));
}

/**
 * The memory this process may use, bytes: its cgroup's memory limit as Node.js reads it
 * (`process.constrainedMemory()`, the container's limit) when there is one below the machine's
 * memory, else the machine's memory (`os.totalmem()`).
 */
export function processMemoryLimit(): number {
  const machine = totalmem();
  const constrained = process.constrainedMemory();
  return constrained > 0 && constrained < machine ? constrained : machine;
}

/** REPLAYABLE_MEMORY_BUDGET_BYTES's default in this process ({@link defaultMemoryBudget}). */
const MEMORY_BUDGET_DEFAULT = defaultMemoryBudget(processMemoryLimit());
/** The values of OTEL_TRACES_EXPORTER replayable accepts ("" is the unset default: none). */
const TRACES_EXPORTERS = ["otlp", "none", ""] as const;
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

function validPort(text: string): boolean {
  const port = Number(text);
  return Number.isInteger(port) && port >= 1 && port <= 65535;
}

const trueOrFalse = (fallback: "true" | "false") =>
  z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(["true", "false"], { message: 'must be "true" or "false"' }))
    .default(fallback)
    .transform((s) => s === "true");

const optionalText = z.string().min(1, notBlank).optional();

/** Each environment variable, its default, and what it accepts. The README's "Configuration" table mirrors this. */
const schema = z.object({
  KAFKA_BROKERS: z
    .string()
    .default("127.0.0.1:9092")
    .transform((s) => s.split(",").map((b) => b.trim()))
    .pipe(
      z
        .array(
          z
            .string()
            // abort: a broker without a port has no port to check the range of.
            .regex(HOST_PORT, { message: "each broker must be host:port, e.g. 127.0.0.1:9092", abort: true })
            .refine((b) => validPort(b.slice(b.lastIndexOf(":") + 1)), {
              message: "each broker's port must be from 1 to 65535",
            }),
        )
        .min(1),
    ),
  KAFKA_CLIENT_ID: z.string().trim().min(1, notBlank).default("replayable"),
  // The Kafka client of the member's feed (issue 30): KafkaJS, or @platformatic/kafka (Node.js >= 22.22 / 24.6).
  KAFKA_CLIENT: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(KAFKA_CLIENTS, { message: `must be one of ${KAFKA_CLIENTS.join(", ")}` }))
    .default("kafkajs"),
  // The group protocol of the platformatic feed: classic (JoinGroup/SyncGroup) or consumer (KIP-848).
  KAFKA_GROUP_PROTOCOL: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(GROUP_PROTOCOLS, { message: `must be one of ${GROUP_PROTOCOLS.join(", ")}` }))
    .default("classic"),
  // Named after Kafka's client settings (security.protocol, sasl.mechanism, ssl.ca.location...).
  KAFKA_SECURITY_PROTOCOL: z
    .string()
    .trim()
    .toUpperCase()
    .pipe(z.enum(SECURITY_PROTOCOLS, { message: `must be one of ${SECURITY_PROTOCOLS.join(", ")}` }))
    .default("PLAINTEXT"),
  KAFKA_SASL_MECHANISM: z
    .string()
    .trim()
    .toUpperCase()
    .pipe(
      z.enum(SASL_MECHANISMS, {
        message: `must be one of ${SASL_MECHANISMS.join(", ")} (GSSAPI/Kerberos is not supported)`,
      }),
    )
    .optional(),
  KAFKA_SASL_USERNAME: optionalText,
  KAFKA_SASL_PASSWORD: optionalText,
  KAFKA_SSL_CA_LOCATION: optionalText,
  KAFKA_SSL_CERTIFICATE_LOCATION: optionalText,
  KAFKA_SSL_KEY_LOCATION: optionalText,
  KAFKA_SSL_KEY_PASSWORD: optionalText,
  KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION: trueOrFalse("true"),
  KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(["https", "none"], { message: 'must be "https" (check the host name) or "none"' }))
    .default("https"),
  DATABASE_URL: z
    .string()
    .default("postgres://postgres@127.0.0.1:5432/test")
    .refine((s) => /^postgres(ql)?:\/\//.test(s), {
      message: "must be a postgres:// or postgresql:// URL, e.g. postgres://user@127.0.0.1:5432/db",
      abort: true,
    })
    .refine((s) => URL.canParse(s), {
      message:
        "is not a valid URL; e.g. postgres://user:password@127.0.0.1:5432/db (percent-encode special characters)",
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
        z.string().regex(TOPIC, {
          message: "each topic name is 1-249 of a-z A-Z 0-9 . _ - (Kafka's legal topic characters)",
        }),
      ),
    ),
  REPLAYABLE_GROUP_ID: z
    .string()
    .default("")
    .refine((s) => s === "" || s.trim().length > 0, notBlank),
  // 8, below the pool's 10 connections: a transaction spends most of its time in round trips, so
  // more of them at once keep both Node and PostgreSQL busy (`make bench`, docs/benchmarks.md: on 6
  // partitions, 3 at once applied 46,000 records/s, one per partition 54,000 to 60,000).
  REPLAYABLE_PARTITIONS_CONCURRENTLY: intFrom(1, 1000, "partitions").default(8),
  // Measured by `make bench` (docs/benchmarks.md): overlapping the fetch with the transaction.
  REPLAYABLE_PREFETCH: trueOrFalse("true"),
  // The one knob of fetch and transaction sizes (src/engine/memoryPlan.ts); the default follows the
  // memory the process may use (defaultMemoryBudget), measured by `make bench` (docs/benchmarks.md).
  REPLAYABLE_MEMORY_BUDGET_BYTES: intFrom(4_194_304, 17_179_869_184, "bytes").default(MEMORY_BUDGET_DEFAULT),
  // Caps only when set: unset, the memory budget decides (src/engine/memoryPlan.ts).
  REPLAYABLE_MAX_BATCH_RECORDS: intFrom(1, 100_000, "records").optional(),
  REPLAYABLE_MAX_BATCH_BYTES: intFrom(1024, 1_073_741_824, "bytes").optional(),
  REPLAYABLE_MAX_RECORD_BYTES: intFrom(1, 1_073_741_824, "bytes").default(1_048_576),
  // More headers than this: dead-lettered (RECORD_TOO_MANY_HEADERS); src/record.ts says why 1000.
  REPLAYABLE_MAX_RECORD_HEADERS: intFrom(1, 1_000_000, "headers").default(DEFAULT_MAX_RECORD_HEADERS),
  REPLAYABLE_SESSION_TIMEOUT_MS: intFrom(6000, 1_800_000, "ms").default(30_000),
  REPLAYABLE_HEARTBEAT_INTERVAL_MS: intFrom(100, 600_000, "ms").default(3000),
  REPLAYABLE_SHUTDOWN_TIMEOUT_MS: intFrom(0, 3_600_000, "ms").default(30_000),
  REPLAYABLE_RETRY_INITIAL_MS: intFrom(1, 600_000, "ms").default(200),
  REPLAYABLE_RETRY_MAX_MS: intFrom(1, 3_600_000, "ms").default(30_000),
  REPLAYABLE_DB_POOL_SIZE: intFrom(1, 1000, "connections").default(10),
  // A transaction waits at most this long for a row lock (PostgreSQL lock_timeout), then is retried
  // with back-off outside the transaction slots, so a lock held elsewhere cannot take every slot.
  REPLAYABLE_LOCK_TIMEOUT_MS: intFrom(0, 3_600_000, "ms").default(5000),
  // Every wait on PostgreSQL has a deadline (docs/design.md "Faults"). 60 s: far above a legitimate
  // statement of a transaction (a lock wait ends at REPLAYABLE_LOCK_TIMEOUT_MS, 5 s), short enough
  // that a silent connection is given up within about a minute.
  REPLAYABLE_DB_QUERY_TIMEOUT_MS: intFrom(100, 3_600_000, "ms").default(60_000),
  // The server ends a transaction whose client went silent, and its row locks with it.
  REPLAYABLE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: intFrom(1000, 3_600_000, "ms").default(60_000),
  REPLAYABLE_DB_KEEPALIVE_MS: intFrom(1000, 7_200_000, "ms").default(10_000),
  // The advisory-lock session is idle between these health queries; each has the query timeout.
  REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS: intFrom(100, 3_600_000, "ms").default(10_000),
  REPLAYABLE_METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  REPLAYABLE_METRICS_PORT: intFrom(0, 65535, "").default(9464),
  // The Prometheus exporters' web configuration file (TLS, basic auth); read by metrics/webConfig.ts.
  REPLAYABLE_METRICS_WEB_CONFIG_FILE: z.string().trim().min(1, notBlank).optional(),
  REPLAYABLE_PROGRESS_INTERVAL_MS: intFrom(0, 3_600_000, "ms").default(10_000),
  REPLAYABLE_LAG_REFRESH_MS: intFrom(100, 3_600_000, "ms").default(5000),
  // 5 minutes: longer than a transaction retried with the longest back-off (REPLAYABLE_RETRY_MAX_MS)
  // a few times, so a short outage does not count as a stall; short enough to page on.
  REPLAYABLE_STALL_TIMEOUT_MS: intFrom(1000, 86_400_000, "ms").default(300_000),
  REPLAYABLE_DLQ_TOPIC: z
    .string()
    .regex(TOPIC, {
      message: "must be a topic name: 1-249 of a-z A-Z 0-9 . _ - (Kafka's legal topic characters)",
    })
    .optional(),
  LOG_LEVEL: z
    .enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.map((l) => `"${l}"`).join(", ")}` })
    .default("info"),
  // Unset: readable lines when stderr is a terminal, JSON lines otherwise (logger.ts).
  LOG_FORMAT: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(
      z.enum(LOG_FORMATS, {
        message: `must be one of ${LOG_FORMATS.map((f) => `"${f}"`).join(", ")} (unset: "pretty" when stderr is a terminal, else "json")`,
      }),
    )
    .optional(),
  // OpenTelemetry traces (docs/observability.md): off unless OTEL_TRACES_EXPORTER names otlp. The
  // SDK reads the other OTEL_* variables (endpoint, protocol, headers, resource) itself.
  OTEL_TRACES_EXPORTER: z
    .string()
    .trim()
    .toLowerCase()
    .transform((s) => s.split(",").map((e) => e.trim()))
    .pipe(
      z.array(
        z.enum(TRACES_EXPORTERS, {
          message: `must be "otlp" or "none" (replayable ships the OTLP exporter only; unset or empty: none)`,
        }),
      ),
    )
    .optional(),
  OTEL_SDK_DISABLED: trueOrFalse("false"),
  // Read by the SDK; checked here so that a typo fails at start-up instead of the SDK sending to
  // its default endpoint without a word.
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl(),
});

/** An OTLP/HTTP endpoint: an absolute http: or https: URL; empty: unset. */
function otlpUrl() {
  return z
    .string()
    .trim()
    .refine(
      (text) => {
        if (text === "") return true;
        try {
          return ["http:", "https:"].includes(new URL(text).protocol);
        } catch {
          return false;
        }
      },
      { message: "must be an http:// or https:// URL of an OTLP/HTTP receiver, e.g. http://localhost:4318" },
    )
    .optional();
}

/**
 * Variables named REPLAYABLE_* that are read outside this file (not settings of the service): fail
 * points (src/support/failpoints.ts), the config file's path, and make demo's database
 * (scripts/demo.ts, which passes its environment on to the members it starts).
 */
const OTHER_VARIABLES = new Set(["REPLAYABLE_FAILPOINTS", "REPLAYABLE_CONFIG", "REPLAYABLE_DEMO_DATABASE"]);

/** The parsed, frozen configuration. Units are in the names (ms, bytes). */
export interface Config {
  readonly kafka: {
    readonly brokers: readonly string[];
    readonly clientId: string;
    /**
     * The client library of the member's feed (KAFKA_CLIENT): `kafkajs` (the default) or
     * `platformatic` (@platformatic/kafka, src/kafka/platformatic/; the admin calls and the DLQ
     * publisher too; the start-up access check and `replayable produce` stay on KafkaJS).
     */
    readonly client: KafkaClient;
    /**
     * The consumer group protocol (KAFKA_GROUP_PROTOCOL): `classic`, or `consumer` (KIP-848, the
     * broker assigns partitions; only with KAFKA_CLIENT=platformatic).
     */
    readonly groupProtocol: GroupProtocol;
    /** TLS and SASL of every Kafka client (KAFKA_SECURITY_PROTOCOL and the KAFKA_SASL_*, KAFKA_SSL_* settings). */
    readonly security: KafkaSecurity;
  };
  readonly databaseUrl: string;
  readonly projection: string;
  /** Topics to consume; empty means the projection's default topics. */
  readonly topics: readonly string[];
  /** Consumer group id; defaults to the projection name (docs/design.md "Words"). */
  readonly groupId: string;
  readonly partitionsConsumedConcurrently: number;
  /** Fetch a partition's next batch while its current batch's transaction runs (one batch ahead). */
  readonly prefetch: boolean;
  /**
   * How much fetched and in-flight record data the member may hold, shared by its assigned
   * partitions, bytes (REPLAYABLE_MEMORY_BUDGET_BYTES): fetch and transaction sizes follow from it
   * (src/engine/memoryPlan.ts).
   */
  readonly memoryBudgetBytes: number;
  /** REPLAYABLE_MAX_BATCH_RECORDS: a cap of the records in one transaction; undefined when not set. */
  readonly maxBatchRecords: number | undefined;
  /** REPLAYABLE_MAX_BATCH_BYTES: a cap of a transaction's and a partition fetch's bytes; undefined when not set. */
  readonly maxBatchBytes: number | undefined;
  readonly maxRecordBytes: number;
  /** REPLAYABLE_MAX_RECORD_HEADERS: a record with more headers is dead-lettered (RECORD_TOO_MANY_HEADERS). */
  readonly maxRecordHeaders: number;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly shutdownTimeoutMs: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  readonly dbPoolSize: number;
  /**
   * PostgreSQL `lock_timeout` of every applying transaction, ms (0: no lock timeout; the wait still ends at REPLAYABLE_DB_QUERY_TIMEOUT_MS). A lock wait past
   * it fails with 55P03 and the transaction is retried with back-off, holding no transaction slot.
   */
  readonly lockTimeoutMs: number;
  /**
   * Client-side deadline of every query of a member on PostgreSQL, ms
   * (REPLAYABLE_DB_QUERY_TIMEOUT_MS, default 60000), also its sessions' `statement_timeout`. A query
   * past it fails, its connection is discarded, and a transaction is retried with back-off: the
   * bound on a wait on a silent (half-open) connection.
   */
  readonly dbQueryTimeoutMs: number;
  /**
   * PostgreSQL `idle_in_transaction_session_timeout` of the transactions' sessions, ms
   * (REPLAYABLE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, default 60000): the server ends a transaction
   * whose client went silent, and releases its checkpoint row lock.
   */
  readonly dbIdleInTransactionTimeoutMs: number;
  /** Idle time before TCP keepalive probes start on every PostgreSQL connection, ms (REPLAYABLE_DB_KEEPALIVE_MS, default 10000). */
  readonly dbKeepAliveMs: number;
  /**
   * How often the advisory-lock session is checked with `SELECT 1` (deadline: the query timeout),
   * ms (REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS, default 10000); a failed check counts as the lock lost.
   */
  readonly dbLockCheckIntervalMs: number;
  /**
   * The metrics endpoint: interface, port, and the web configuration file (HTTPS and basic auth,
   * the Prometheus exporters' format; undefined: plain HTTP without authentication).
   */
  readonly metrics: {
    readonly host: string;
    readonly port: number;
    readonly webConfigFile: string | undefined;
  };
  /** How often `run` logs its rate and remaining lag, ms; 0 turns the progress line off. */
  readonly progressIntervalMs: number;
  /** How often the lag, checkpoint and commit-gap gauges are refreshed from Kafka and PostgreSQL, ms. */
  readonly lagRefreshMs: number;
  /**
   * A partition whose position has not moved for this long while it has lag is stalled: warned
   * about, counted in `replayable_partition_stalled`, and /readyz answers not ready, ms.
   */
  readonly stallTimeoutMs: number;
  readonly logLevel: string;
  /** LOG_FORMAT: `json` or `pretty` log lines; undefined: pretty on a terminal, else JSON. */
  readonly logFormat: LogFormat | undefined;
  /** Topic that dead letters are also published to after COMMIT; undefined when not configured. */
  readonly dlqTopic: string | undefined;
  /**
   * Where traces go: `otlp` when OTEL_TRACES_EXPORTER names it (and OTEL_SDK_DISABLED is not
   * true), else `none`, the default: no OpenTelemetry SDK is loaded (docs/observability.md).
   */
  readonly tracesExporter: "otlp" | "none";
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
  file?: FileSettings,
): Config {
  const result = parseConfig(env, overrides, file);
  if (!result.ok) {
    throw new ReplayableError("CONFIG_INVALID", `invalid configuration:\n${result.problems.join("\n")}`, {
      context: { variables: result.variables },
    });
  }
  return result.config;
}

/** Settings read from a config file, the lowest layer (environment variables and flags override them). */
export interface FileSettings {
  /** The file, as problems name it (e.g. `replayable.config.ts`). */
  readonly label: string;
  /** Each setting as its variable would hold it (see configFile/settings.ts). */
  readonly values: Partial<Record<ConfigVariable, string>>;
  /** The setting's name in the file, per variable (`kafkaBrokers` for KAFKA_BROKERS). */
  readonly names: Partial<Record<ConfigVariable, string>>;
  /** The file's `kafkaOauthBearerProvider`, for KAFKA_SASL_MECHANISM=OAUTHBEARER. */
  readonly oauthBearerProvider?: OauthBearerProvider;
}

/** What {@link parseConfig} found: the config, or every problem as one line each. */
export type ConfigParse =
  | { readonly ok: true; readonly config: Config }
  | { readonly ok: false; readonly problems: readonly string[]; readonly variables: readonly string[] };

/**
 * {@link loadConfig} without throwing: the layers are the config file (lowest), then `env`, then
 * `overrides` (flags). Each problem line names the variable, its value and where it came from.
 */
export function parseConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<ConfigVariable, string | undefined>> = {},
  file?: FileSettings,
): ConfigParse {
  registerEnvSecrets(env);
  const secretFiles = readSecretFiles(env);
  const input: Record<string, string> = {};
  const source = new Map<string, string>();
  for (const key of Object.keys(schema.shape)) {
    const flag = overrides[key as ConfigVariable];
    const fileValue = file?.values[key as ConfigVariable];
    const envValue = env[key] === "" ? undefined : (env[key] ?? secretFiles.values.get(key));
    const value = flag === "" ? (envValue ?? fileValue) : (flag ?? envValue ?? fileValue);
    if (value !== undefined && value !== "") input[key] = value;
    if (flag !== undefined && flag !== "") source.set(key, " (from a command-line flag)");
    else if (secretFiles.sources.has(key) && env[key] === undefined)
      source.set(key, ` (from ${secretFiles.sources.get(key)})`);
    else if (envValue === undefined && fileValue !== undefined && fileValue !== "" && file !== undefined)
      source.set(key, ` (from ${file.label}: ${file.names[key as ConfigVariable] ?? key})`);
  }
  for (const name of SECRET_SETTINGS) if (name !== "DATABASE_URL") registerSecret(input[name]);
  if (input.DATABASE_URL !== undefined) registerUrlSecret(input.DATABASE_URL);
  const problems: SettingProblem[] = [...unknownVariables(env), ...secretFiles.problems];
  // Each variable on its own, then the rules between those that are valid: every problem at once.
  const values: Partial<z.output<typeof schema>> = {};
  for (const [key, field] of Object.entries(schema.shape)) {
    const result = field.safeParse(input[key]);
    if (result.success) (values as Record<string, unknown>)[key] = result.data;
    else for (const issue of result.error.issues) problems.push({ variable: key, message: issue.message });
  }
  // A setting whose NAME_FILE could not be read is named once, on NAME_FILE: its "is required" is that same problem.
  const badFiles = new Set(secretFiles.problems.map((p) => p.variable));
  const unread = (variable: string) => badFiles.has(fileVariable(variable)) && input[variable] === undefined;
  problems.push(...[...crossChecks(values), ...securityChecks(values)].filter((p) => !unread(p.variable)));
  const security =
    problems.length === 0 ? securityOf(schema.parse(input), file?.oauthBearerProvider) : undefined;
  if (security !== undefined && !("protocol" in security)) problems.push(...security.problems);
  if (problems.length > 0 || security === undefined || !("protocol" in security)) {
    const lines = problems.map(({ variable, message }) => {
      const given = input[variable] ?? env[variable];
      // A value read from a NAME_FILE is a secret whatever it holds: never shown.
      const hidden =
        given === undefined || (secretFiles.sources.has(variable) && env[variable] === undefined);
      const shown = hidden ? "" : (redact(variable, given) ?? "");
      return `  ${variable}${shown}${source.get(variable) ?? ""}: ${message}`;
    });
    return { ok: false, problems: lines, variables: problems.map((p) => p.variable) };
  }
  return { ok: true, config: freezeConfig(schema.parse(input), security) };
}

/**
 * An unknown REPLAYABLE_* variable, with the setting it was probably meant to be; and a KAFKA_*
 * variable one edit away from a setting (`KAFKA_BROKER`), or KAFKA_BOOTSTRAP_SERVERS without
 * KAFKA_BROKERS (Java's name for them). Other KAFKA_* variables are left alone:
 * the broker scripts and broker images use that prefix too (KAFKA_HEAP_OPTS, KAFKA_BROKER_ID).
 */
function unknownVariables(env: Record<string, string | undefined>): SettingProblem[] {
  const problems: SettingProblem[] = [];
  const secretFileVariables = new Set(SECRET_SETTINGS.map(fileVariable));
  const settings = Object.keys(schema.shape);
  const kafkaSettings = [...settings, ...secretFileVariables].filter((s) => s.startsWith("KAFKA_"));
  for (const name of Object.keys(env).sort()) {
    if (name in schema.shape || secretFileVariables.has(name)) continue;
    if (name.startsWith("KAFKA_")) {
      const typo = closest(name, kafkaSettings, 1);
      if (typo !== undefined)
        problems.push({ variable: name, message: `is not a setting; did you mean ${typo}?` });
      // Java's and Kafka Connect's name for the brokers, alone: the brokers meant for replayable.
      else if (name === "KAFKA_BOOTSTRAP_SERVERS" && env.KAFKA_BROKERS === undefined)
        problems.push({
          variable: name,
          message: "is not a setting; replayable reads the brokers from KAFKA_BROKERS",
        });
      continue;
    }
    if (!name.startsWith("REPLAYABLE_") || OTHER_VARIABLES.has(name)) continue;
    const suggestion = closest(name, settings);
    problems.push({
      variable: name,
      message: suggestion
        ? `is not a setting; did you mean ${suggestion}?`
        : `is not a setting (the settings are listed under "Configuration" in README.md)`,
    });
  }
  return problems;
}

function freezeConfig(c: z.output<typeof schema>, security: KafkaSecurity): Config {
  return Object.freeze({
    kafka: Object.freeze({
      brokers: Object.freeze(c.KAFKA_BROKERS),
      clientId: c.KAFKA_CLIENT_ID,
      client: c.KAFKA_CLIENT,
      groupProtocol: c.KAFKA_GROUP_PROTOCOL,
      security,
    }),
    databaseUrl: c.DATABASE_URL,
    projection: c.REPLAYABLE_PROJECTION,
    topics: Object.freeze(c.REPLAYABLE_TOPICS),
    groupId: c.REPLAYABLE_GROUP_ID === "" ? c.REPLAYABLE_PROJECTION : c.REPLAYABLE_GROUP_ID,
    partitionsConsumedConcurrently: c.REPLAYABLE_PARTITIONS_CONCURRENTLY,
    prefetch: c.REPLAYABLE_PREFETCH,
    memoryBudgetBytes: c.REPLAYABLE_MEMORY_BUDGET_BYTES,
    maxBatchRecords: c.REPLAYABLE_MAX_BATCH_RECORDS,
    maxBatchBytes: c.REPLAYABLE_MAX_BATCH_BYTES,
    maxRecordBytes: c.REPLAYABLE_MAX_RECORD_BYTES,
    maxRecordHeaders: c.REPLAYABLE_MAX_RECORD_HEADERS,
    sessionTimeoutMs: c.REPLAYABLE_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: c.REPLAYABLE_HEARTBEAT_INTERVAL_MS,
    shutdownTimeoutMs: c.REPLAYABLE_SHUTDOWN_TIMEOUT_MS,
    retryInitialMs: c.REPLAYABLE_RETRY_INITIAL_MS,
    retryMaxMs: c.REPLAYABLE_RETRY_MAX_MS,
    dbPoolSize: c.REPLAYABLE_DB_POOL_SIZE,
    lockTimeoutMs: c.REPLAYABLE_LOCK_TIMEOUT_MS,
    dbQueryTimeoutMs: c.REPLAYABLE_DB_QUERY_TIMEOUT_MS,
    dbIdleInTransactionTimeoutMs: c.REPLAYABLE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    dbKeepAliveMs: c.REPLAYABLE_DB_KEEPALIVE_MS,
    dbLockCheckIntervalMs: c.REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS,
    metrics: Object.freeze({
      host: c.REPLAYABLE_METRICS_HOST,
      port: c.REPLAYABLE_METRICS_PORT,
      webConfigFile: c.REPLAYABLE_METRICS_WEB_CONFIG_FILE,
    }),
    progressIntervalMs: c.REPLAYABLE_PROGRESS_INTERVAL_MS,
    lagRefreshMs: c.REPLAYABLE_LAG_REFRESH_MS,
    stallTimeoutMs: c.REPLAYABLE_STALL_TIMEOUT_MS,
    logLevel: c.LOG_LEVEL,
    logFormat: c.LOG_FORMAT,
    dlqTopic: c.REPLAYABLE_DLQ_TOPIC,
    tracesExporter: !c.OTEL_SDK_DISABLED && (c.OTEL_TRACES_EXPORTER ?? []).includes("otlp") ? "otlp" : "none",
  });
}

/** Rules between settings, checked once each one is valid on its own. */
function crossChecks(c: Partial<z.output<typeof schema>>): { variable: string; message: string }[] {
  const problems: { variable: string; message: string }[] = [];
  const both = <A, B>(a: A | undefined, b: B | undefined): [A, B] | undefined =>
    a === undefined || b === undefined ? undefined : [a, b];
  const heartbeat = both(c.REPLAYABLE_HEARTBEAT_INTERVAL_MS, c.REPLAYABLE_SESSION_TIMEOUT_MS);
  if (heartbeat && heartbeat[0] * 3 > heartbeat[1]) {
    problems.push({
      variable: "REPLAYABLE_HEARTBEAT_INTERVAL_MS",
      message: `must be at most a third of REPLAYABLE_SESSION_TIMEOUT_MS (${c.REPLAYABLE_SESSION_TIMEOUT_MS}), as Kafka's heartbeat.interval.ms docs advise`,
    });
  }
  const retry = both(c.REPLAYABLE_RETRY_INITIAL_MS, c.REPLAYABLE_RETRY_MAX_MS);
  if (retry && retry[0] > retry[1]) {
    problems.push({
      variable: "REPLAYABLE_RETRY_INITIAL_MS",
      message: `must be at most REPLAYABLE_RETRY_MAX_MS (${c.REPLAYABLE_RETRY_MAX_MS})`,
    });
  }
  const connections = both(c.REPLAYABLE_PARTITIONS_CONCURRENTLY, c.REPLAYABLE_DB_POOL_SIZE);
  if (connections && connections[0] > connections[1]) {
    problems.push({
      variable: "REPLAYABLE_PARTITIONS_CONCURRENTLY",
      message: `must be at most REPLAYABLE_DB_POOL_SIZE (${c.REPLAYABLE_DB_POOL_SIZE}): each partition processed at once needs a connection for its transaction; lower it or raise the pool`,
    });
  }
  const stall = both(c.REPLAYABLE_STALL_TIMEOUT_MS, c.REPLAYABLE_LAG_REFRESH_MS);
  if (stall && stall[0] <= stall[1]) {
    problems.push({
      variable: "REPLAYABLE_STALL_TIMEOUT_MS",
      message: `must be more than REPLAYABLE_LAG_REFRESH_MS (${c.REPLAYABLE_LAG_REFRESH_MS}): progress is checked at each lag refresh; raise it or refresh more often`,
    });
  }
  const queryTimeout = both(c.REPLAYABLE_DB_QUERY_TIMEOUT_MS, c.REPLAYABLE_LOCK_TIMEOUT_MS);
  if (queryTimeout && queryTimeout[1] > 0 && queryTimeout[0] <= queryTimeout[1]) {
    problems.push({
      variable: "REPLAYABLE_DB_QUERY_TIMEOUT_MS",
      message: `must be more than REPLAYABLE_LOCK_TIMEOUT_MS (${c.REPLAYABLE_LOCK_TIMEOUT_MS}): a statement waiting for a row lock would be cut off by the client before lock_timeout ends the wait`,
    });
  }
  const dlq = both(c.REPLAYABLE_DLQ_TOPIC, c.REPLAYABLE_TOPICS);
  if (dlq && dlq[1].includes(dlq[0])) {
    problems.push({
      variable: "REPLAYABLE_DLQ_TOPIC",
      message:
        "must not be one of the consumed topics (REPLAYABLE_TOPICS): the consumer would read its own dead letters",
    });
  }
  return problems;
}

type Parsed = z.output<typeof schema>;

/** The rules between the security settings (no file is read here). */
function securityChecks(c: Partial<Parsed>): SettingProblem[] {
  const protocol = c.KAFKA_SECURITY_PROTOCOL;
  if (protocol === undefined) return [];
  const problems: SettingProblem[] = [];
  if (c.KAFKA_GROUP_PROTOCOL === "consumer" && c.KAFKA_CLIENT !== "platformatic")
    problems.push({
      variable: "KAFKA_GROUP_PROTOCOL",
      message: "consumer (KIP-848) needs KAFKA_CLIENT=platformatic: KafkaJS speaks the classic protocol only",
    });
  const sasl = protocol.startsWith("SASL_");
  const tls = protocol.endsWith("SSL");
  const saslSettings = ["KAFKA_SASL_MECHANISM", "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"] as const;
  const sslSettings = [
    "KAFKA_SSL_CA_LOCATION",
    "KAFKA_SSL_CERTIFICATE_LOCATION",
    "KAFKA_SSL_KEY_LOCATION",
    "KAFKA_SSL_KEY_PASSWORD",
  ] as const;
  const ignored = (variable: string, uses: string) =>
    problems.push({
      variable,
      message: `is set but KAFKA_SECURITY_PROTOCOL=${protocol} does not use ${uses}; set KAFKA_SECURITY_PROTOCOL to ${uses === "SASL" ? "SASL_SSL or SASL_PLAINTEXT" : "SSL or SASL_SSL"}, or remove it`,
    });
  if (!sasl) for (const v of saslSettings) if (c[v] !== undefined) ignored(v, "SASL");
  if (!tls) for (const v of sslSettings) if (c[v] !== undefined) ignored(v, "TLS");
  if (sasl) problems.push(...saslProblems(c, protocol));
  if (tls) problems.push(...mutualTlsProblems(c));
  return problems;
}

/** The SASL settings a SASL protocol needs: a mechanism, and a username and password unless OAUTHBEARER. */
function saslProblems(c: Partial<Parsed>, protocol: string): SettingProblem[] {
  const problems: SettingProblem[] = [];
  const mechanism = c.KAFKA_SASL_MECHANISM;
  if (mechanism === undefined) {
    problems.push({
      variable: "KAFKA_SASL_MECHANISM",
      message: `is required with KAFKA_SECURITY_PROTOCOL=${protocol}: one of ${SASL_MECHANISMS.join(", ")}`,
    });
  }
  if (mechanism !== undefined && mechanism !== "OAUTHBEARER") {
    for (const v of ["KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"] as const)
      if (c[v] === undefined)
        problems.push({
          variable: v,
          message: `is required with KAFKA_SASL_MECHANISM=${mechanism}${v === "KAFKA_SASL_PASSWORD" ? " (or KAFKA_SASL_PASSWORD_FILE)" : ""}`,
        });
  }
  if (mechanism === "OAUTHBEARER") {
    for (const v of ["KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"] as const)
      if (c[v] !== undefined)
        problems.push({
          variable: v,
          message:
            "is not used with KAFKA_SASL_MECHANISM=OAUTHBEARER (the token provider authenticates); remove it",
        });
  }
  return problems;
}

/** With TLS: the client certificate and its key come together, and a key password needs its key. */
function mutualTlsProblems(c: Partial<Parsed>): SettingProblem[] {
  const problems: SettingProblem[] = [];
  const pair = [
    ["KAFKA_SSL_CERTIFICATE_LOCATION", "KAFKA_SSL_KEY_LOCATION"],
    ["KAFKA_SSL_KEY_LOCATION", "KAFKA_SSL_CERTIFICATE_LOCATION"],
  ] as const;
  for (const [given, missing] of pair)
    if (c[given] !== undefined && c[missing] === undefined)
      problems.push({
        variable: missing,
        message: `is required with ${given}: mutual TLS needs both the client certificate and its private key`,
      });
  if (c.KAFKA_SSL_KEY_PASSWORD !== undefined && c.KAFKA_SSL_KEY_LOCATION === undefined)
    problems.push({
      variable: "KAFKA_SSL_KEY_PASSWORD",
      message: "is set without KAFKA_SSL_KEY_LOCATION, the key it decrypts",
    });
  return problems;
}

/** The security settings as one object, with the TLS files read and checked (pemFiles.ts). */
function securityOf(
  c: Parsed,
  oauthBearerProvider: OauthBearerProvider | undefined,
): KafkaSecurity | { problems: readonly SettingProblem[] } {
  const protocol = c.KAFKA_SECURITY_PROTOCOL;
  const mechanism = c.KAFKA_SASL_MECHANISM;
  const sasl =
    protocol.startsWith("SASL_") && mechanism !== undefined
      ? Object.freeze({ mechanism, username: c.KAFKA_SASL_USERNAME, password: c.KAFKA_SASL_PASSWORD })
      : undefined;
  if (!protocol.endsWith("SSL"))
    return Object.freeze({ protocol, sasl, ssl: undefined, oauthBearerProvider });
  const files = readPemFiles({
    ca: c.KAFKA_SSL_CA_LOCATION,
    certificate: c.KAFKA_SSL_CERTIFICATE_LOCATION,
    key: c.KAFKA_SSL_KEY_LOCATION,
    keyPassword: c.KAFKA_SSL_KEY_PASSWORD,
  });
  if (files.problems.length > 0) return { problems: files.problems };
  const ssl = Object.freeze({
    ca: files.ca,
    certificate: files.certificate,
    certificateSubject: files.certificateSubject,
    key: files.key,
    keyPassword: c.KAFKA_SSL_KEY_PASSWORD,
    verifyCertificate: c.KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION,
    verifyHostname: c.KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM === "https",
  });
  return Object.freeze({ protocol, sasl, ssl, oauthBearerProvider });
}

/**
 * Hides the password of a connection URL, for logs and error messages.
 * @example redactUrl("postgres://u:secret@h/db") === "postgres://u:***@h/db"
 */
export function redactUrl(url: string): string {
  return redactUrlPassword(url).replace(/([?&](?:ssl)?password=)[^&#]*/gi, "$1***");
}

/** `=value` for a problem line: a URL without its password, nothing for another secret. */
function redact(variable: string, value: string): string | undefined {
  // Only a URL can be shown without its password; anything else might be the password itself.
  if (variable === "DATABASE_URL")
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? `=${redactUrl(value)}` : undefined;
  return SECRET_SETTINGS.includes(variable) ? undefined : `=${value}`;
}
