import { describe, expect, it } from "vitest";
import { defaultMemoryBudget, loadConfig, processMemoryLimit, redactUrl } from "../../src/config.js";
import { ReplayableError } from "../../src/errors.js";

function problems(env: Record<string, string>, overrides: Record<string, string> = {}): string {
  try {
    loadConfig(env, overrides);
  } catch (error) {
    expect(error).toBeInstanceOf(ReplayableError);
    expect((error as ReplayableError).code).toBe("CONFIG_INVALID");
    return (error as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

describe("loadConfig refuses each bad setting, naming the variable and what is valid", () => {
  const cases: [Record<string, string>, string][] = [
    [
      { KAFKA_BROKERS: "localhost" },
      "KAFKA_BROKERS=localhost: each broker must be host:port, e.g. 127.0.0.1:9092",
    ],
    [{ KAFKA_BROKERS: "a:1,,b:2" }, "KAFKA_BROKERS=a:1,,b:2: each broker must be host:port"],
    [
      { KAFKA_BROKERS: "127.0.0.1:99999" },
      "KAFKA_BROKERS=127.0.0.1:99999: each broker's port must be from 1 to 65535",
    ],
    [{ KAFKA_CLIENT_ID: "   " }, "KAFKA_CLIENT_ID=   : must not be blank"],
    [{ KAFKA_CLIENT: "rdkafka" }, "KAFKA_CLIENT=rdkafka: must be one of kafkajs, platformatic"],
    [
      { KAFKA_GROUP_PROTOCOL: "consumer" },
      "KAFKA_GROUP_PROTOCOL=consumer: consumer (KIP-848) needs KAFKA_CLIENT=platformatic",
    ],
    [
      { DATABASE_URL: "mysql://u@h/db" },
      "DATABASE_URL=mysql://u@h/db: must be a postgres:// or postgresql:// URL",
    ],
    [
      { DATABASE_URL: "postgres://u:secret@bad host/db" },
      "DATABASE_URL=postgres://u:***@bad host/db: is not a valid URL",
    ],
    [
      { REPLAYABLE_PROJECTION: "Ledger" },
      "REPLAYABLE_PROJECTION=Ledger: must be a projection name: lower case letters, digits, _",
    ],
    [
      { REPLAYABLE_TOPICS: "ok,bad topic" },
      "REPLAYABLE_TOPICS=ok,bad topic: each topic name is 1-249 of a-z A-Z 0-9 . _ -",
    ],
    [{ REPLAYABLE_GROUP_ID: "  " }, "REPLAYABLE_GROUP_ID=  : must not be blank"],
    [
      { REPLAYABLE_PARTITIONS_CONCURRENTLY: "0" },
      "REPLAYABLE_PARTITIONS_CONCURRENTLY=0: must be at least 1 partition",
    ],
    [{ REPLAYABLE_PREFETCH: "yes" }, 'REPLAYABLE_PREFETCH=yes: must be "true" or "false"'],
    [
      { REPLAYABLE_MAX_BATCH_RECORDS: "1e3" },
      "REPLAYABLE_MAX_BATCH_RECORDS=1e3: must be a whole number of records from 1 to 100000",
    ],
    [{ REPLAYABLE_MAX_BATCH_BYTES: "100" }, "REPLAYABLE_MAX_BATCH_BYTES=100: must be at least 1024 bytes"],
    [
      { REPLAYABLE_MEMORY_BUDGET_BYTES: "1048576" },
      "REPLAYABLE_MEMORY_BUDGET_BYTES=1048576: must be at least 4194304 bytes",
    ],
    [
      { REPLAYABLE_MEMORY_BUDGET_BYTES: "64MiB" },
      "REPLAYABLE_MEMORY_BUDGET_BYTES=64MiB: must be a whole number of bytes from 4194304 to 17179869184",
    ],
    [
      { REPLAYABLE_MAX_RECORD_BYTES: "-5" },
      "REPLAYABLE_MAX_RECORD_BYTES=-5: must be a whole number of bytes from 1 to 1073741824",
    ],
    [
      { REPLAYABLE_SESSION_TIMEOUT_MS: "5000" },
      "REPLAYABLE_SESSION_TIMEOUT_MS=5000: must be at least 6000 ms",
    ],
    [
      { REPLAYABLE_SESSION_TIMEOUT_MS: "6000", REPLAYABLE_HEARTBEAT_INTERVAL_MS: "3000" },
      "REPLAYABLE_HEARTBEAT_INTERVAL_MS=3000: must be at most a third of REPLAYABLE_SESSION_TIMEOUT_MS (6000)",
    ],
    [
      { REPLAYABLE_SHUTDOWN_TIMEOUT_MS: "soon" },
      "REPLAYABLE_SHUTDOWN_TIMEOUT_MS=soon: must be a whole number of ms",
    ],
    [
      { REPLAYABLE_RETRY_INITIAL_MS: "5000", REPLAYABLE_RETRY_MAX_MS: "1000" },
      "REPLAYABLE_RETRY_INITIAL_MS=5000: must be at most REPLAYABLE_RETRY_MAX_MS (1000)",
    ],
    [{ REPLAYABLE_DB_POOL_SIZE: "0" }, "REPLAYABLE_DB_POOL_SIZE=0: must be at least 1 connection"],
    [
      { REPLAYABLE_DB_POOL_SIZE: "4" },
      "REPLAYABLE_PARTITIONS_CONCURRENTLY: must be at most REPLAYABLE_DB_POOL_SIZE (4): each partition processed at once needs a connection",
    ],
    [{ REPLAYABLE_METRICS_PORT: "70000" }, "REPLAYABLE_METRICS_PORT=70000: must be at most 65535"],
    [{ REPLAYABLE_STALL_TIMEOUT_MS: "500" }, "REPLAYABLE_STALL_TIMEOUT_MS=500: must be at least 1000 ms"],
    [
      { REPLAYABLE_STALL_TIMEOUT_MS: "5000", REPLAYABLE_LAG_REFRESH_MS: "5000" },
      "REPLAYABLE_STALL_TIMEOUT_MS=5000: must be more than REPLAYABLE_LAG_REFRESH_MS (5000): progress is checked at each lag refresh",
    ],
    [
      { LOG_LEVEL: "loud" },
      'LOG_LEVEL=loud: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
    ],
    [
      { REPLAYABLE_DLQ_TOPIC: "dead letters" },
      "REPLAYABLE_DLQ_TOPIC=dead letters: must be a topic name: 1-249 of a-z A-Z 0-9 . _ -",
    ],
    [
      { REPLAYABLE_TOPICS: "ledger-events", REPLAYABLE_DLQ_TOPIC: "ledger-events" },
      "REPLAYABLE_DLQ_TOPIC=ledger-events: must not be one of the consumed topics (REPLAYABLE_TOPICS)",
    ],
    [
      { REPLAYABLE_MAX_BATCH_RECORD: "5" },
      "REPLAYABLE_MAX_BATCH_RECORD=5: is not a setting; did you mean REPLAYABLE_MAX_BATCH_RECORDS?",
    ],
    [
      { OTEL_TRACES_EXPORTER: "jaeger" },
      'OTEL_TRACES_EXPORTER=jaeger: must be "otlp" or "none" (replayable ships the OTLP exporter only; unset or empty: none)',
    ],
    [{ OTEL_SDK_DISABLED: "yes" }, 'OTEL_SDK_DISABLED=yes: must be "true" or "false"'],
    [
      { KAFKA_BROKER: "127.0.0.1:9092" },
      "KAFKA_BROKER=127.0.0.1:9092: is not a setting; did you mean KAFKA_BROKERS?",
    ],
    [
      { KAFKA_BOOTSTRAP_SERVERS: "kafka:9092" },
      "KAFKA_BOOTSTRAP_SERVERS=kafka:9092: is not a setting; replayable reads the brokers from KAFKA_BROKERS",
    ],
    [
      { KAFKA_SASL_USERNAM: "app" },
      "KAFKA_SASL_USERNAM=app: is not a setting; did you mean KAFKA_SASL_USERNAME?",
    ],
    [
      { REPLAYABLE_VERBOSE: "1" },
      'REPLAYABLE_VERBOSE=1: is not a setting (the settings are listed under "Configuration" in README.md)',
    ],
  ];
  it.each(cases)("%j", (env, message) => {
    expect(problems(env)).toContain(`\n  ${message}`);
  });

  it("a broker without a port gets the one line that says so, not the port's range too", () => {
    expect(problems({ KAFKA_BROKERS: "localhost" })).toBe(
      "invalid configuration:\n  KAFKA_BROKERS=localhost: each broker must be host:port, e.g. 127.0.0.1:9092",
    );
  });

  it("leaves other tools' KAFKA_* variables alone: only one edit away from a setting is a typo", () => {
    // The broker scripts' and broker images' own variables (KAFKA_BROKER_ID is 3 edits from
    // KAFKA_BROKERS) may share the member's environment.
    const others = { KAFKA_PORT: "9092", KAFKA_HEAP_OPTS: "-Xmx1G", KAFKA_BROKER_ID: "1", KAFKA_NODES: "3" };
    expect(loadConfig(others).kafka.brokers).toEqual(["127.0.0.1:9092"]);
    // Java's name for the brokers beside KAFKA_BROKERS is another program's setting.
    const both = { KAFKA_BROKERS: "a:9092", KAFKA_BOOTSTRAP_SERVERS: "b:9092" };
    expect(loadConfig(both).kafka.brokers).toEqual(["a:9092"]);
  });

  it("reports every problem at once, one line each", () => {
    const message = problems({
      LOG_LEVEL: "loud",
      REPLAYABLE_SESSION_TIMEOUT_MS: "6000",
      REPLAYABLE_HEARTBEAT_INTERVAL_MS: "3000",
      REPLAYABLE_METRICS_PORT: "x",
    });
    expect(message.split("\n")).toEqual([
      "invalid configuration:",
      "  REPLAYABLE_METRICS_PORT=x: must be a whole number from 0 to 65535",
      '  LOG_LEVEL=loud: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
      expect.stringContaining("REPLAYABLE_HEARTBEAT_INTERVAL_MS=3000: must be at most a third"),
    ]);
  });

  it("says when the bad value came from a command-line flag", () => {
    expect(problems({}, { REPLAYABLE_METRICS_PORT: "70000" })).toContain(
      "REPLAYABLE_METRICS_PORT=70000 (from a command-line flag): must be at most 65535",
    );
  });

  it("accepts the defaults, an empty value as unset, REPLAYABLE_FAILPOINTS and make demo's REPLAYABLE_DEMO_DATABASE", () => {
    const config = loadConfig({
      REPLAYABLE_GROUP_ID: "",
      REPLAYABLE_FAILPOINTS: "in-apply=sleep:1@1",
      REPLAYABLE_DEMO_DATABASE: "replayable_demo_2",
    });
    expect(config.groupId).toBe("ledger");
    expect(config.dlqTopic).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("refuses an OTLP endpoint that is not an http(s) URL, naming it", () => {
    const message = problems({
      OTEL_EXPORTER_OTLP_ENDPOINT: "not a url",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "ftp://x",
    });
    expect(message).toContain(
      "OTEL_EXPORTER_OTLP_ENDPOINT=not a url: must be an http:// or https:// URL of an OTLP/HTTP receiver, e.g. http://localhost:4318",
    );
    expect(message).toContain(
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=ftp://x: must be an http:// or https:// URL of an OTLP/HTTP receiver, e.g. http://localhost:4318",
    );
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example:4318" }).tracesExporter).toBe(
      "none",
    );
  });

  it("keeps traces off unless OTEL_TRACES_EXPORTER names otlp and OTEL_SDK_DISABLED is not true", () => {
    expect(loadConfig({}).tracesExporter).toBe("none");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "none" }).tracesExporter).toBe("none");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: " OTLP " }).tracesExporter).toBe("otlp");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "true" }).tracesExporter).toBe(
      "none",
    );
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "false" }).tracesExporter).toBe(
      "otlp",
    );
  });

  it("reads REPLAYABLE_DLQ_TOPIC", () => {
    expect(loadConfig({ REPLAYABLE_DLQ_TOPIC: "ledger-events.dlq" }).dlqTopic).toBe("ledger-events.dlq");
  });
});

describe("loadConfig", () => {
  it("runs the feed on KafkaJS with the classic protocol unless KAFKA_CLIENT and KAFKA_GROUP_PROTOCOL say otherwise", () => {
    expect(loadConfig({}).kafka).toMatchObject({ client: "kafkajs", groupProtocol: "classic" });
    expect(
      loadConfig({ KAFKA_CLIENT: " Platformatic ", KAFKA_GROUP_PROTOCOL: "consumer" }).kafka,
    ).toMatchObject({ client: "platformatic", groupProtocol: "consumer" });
  });

  it("gives defaults and a frozen object", () => {
    const config = loadConfig({});
    expect(config.kafka.brokers).toEqual(["127.0.0.1:9092"]);
    expect(config.groupId).toBe("ledger");
    // The memory budget decides the sizes; the old settings are caps only when set.
    expect(config.memoryBudgetBytes).toBe(defaultMemoryBudget(processMemoryLimit()));
    expect(config.maxBatchRecords).toBeUndefined();
    expect(config.maxBatchBytes).toBeUndefined();
    expect(loadConfig({ REPLAYABLE_MAX_BATCH_BYTES: "65536" }).maxBatchBytes).toBe(65_536);
    expect(config.partitionsConsumedConcurrently).toBe(8);
    expect(config.prefetch).toBe(true);
    expect(config.dbPoolSize).toBe(10);
    expect(config.stallTimeoutMs).toBe(300_000);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("defaults the group id to the projection name and lets flags override the environment", () => {
    expect(loadConfig({ REPLAYABLE_PROJECTION: "github" }).groupId).toBe("github");
    expect(loadConfig({ REPLAYABLE_GROUP_ID: "a" }, { REPLAYABLE_GROUP_ID: "b" }).groupId).toBe("b");
  });

  it("reports every invalid variable at once, each with what is valid", () => {
    const message = problems({
      KAFKA_BROKERS: "localhost",
      REPLAYABLE_MAX_BATCH_RECORDS: "0",
      REPLAYABLE_SESSION_TIMEOUT_MS: "ten",
      LOG_LEVEL: "loud",
    });
    expect(message).toMatch(/KAFKA_BROKERS=localhost: each broker must be host:port/);
    expect(message).toMatch(/REPLAYABLE_MAX_BATCH_RECORDS=0: must be at least 1 record/);
    expect(message).toMatch(/REPLAYABLE_SESSION_TIMEOUT_MS=ten: must be a whole number of ms/);
    expect(message).toMatch(/LOG_LEVEL=loud/);
  });

  it("never echoes a password from DATABASE_URL", () => {
    const message = problems({ DATABASE_URL: "mysql://u:hunter2@h/db" });
    expect(message).not.toContain("hunter2");
    expect(message).toMatch(/DATABASE_URL=mysql:\/\/u:\*\*\*@h\/db: must be a postgres/);
    expect(redactUrl("postgres://user:secret@127.0.0.1:5432/db")).toBe(
      "postgres://user:***@127.0.0.1:5432/db",
    );
  });

  it("gives every PostgreSQL wait a deadline by default, and a query timeout above lock_timeout", () => {
    const config = loadConfig({});
    expect(config.dbQueryTimeoutMs).toBe(60_000);
    expect(config.dbIdleInTransactionTimeoutMs).toBe(60_000);
    expect(config.dbKeepAliveMs).toBe(10_000);
    expect(config.dbLockCheckIntervalMs).toBe(10_000);
    expect(problems({ REPLAYABLE_LOCK_TIMEOUT_MS: "5000", REPLAYABLE_DB_QUERY_TIMEOUT_MS: "5000" })).toMatch(
      /REPLAYABLE_DB_QUERY_TIMEOUT_MS=5000: must be more than REPLAYABLE_LOCK_TIMEOUT_MS \(5000\)/,
    );
    expect(
      loadConfig({ REPLAYABLE_LOCK_TIMEOUT_MS: "0", REPLAYABLE_DB_QUERY_TIMEOUT_MS: "100" }).dbQueryTimeoutMs,
    ).toBe(100);
    expect(problems({ REPLAYABLE_DB_QUERY_TIMEOUT_MS: "0" })).toMatch(
      /REPLAYABLE_DB_QUERY_TIMEOUT_MS=0: must be at least 100 ms/,
    );
  });

  it("refuses a heartbeat interval above a third of the session timeout", () => {
    expect(
      problems({ REPLAYABLE_SESSION_TIMEOUT_MS: "6000", REPLAYABLE_HEARTBEAT_INTERVAL_MS: "3000" }),
    ).toMatch(/REPLAYABLE_HEARTBEAT_INTERVAL_MS=3000: must be at most a third/);
  });
});

describe("the memory budget's default", () => {
  const MIB = 1_048_576;
  it("is a quarter of the memory limit in whole MiB, between 16 and 128 MiB", () => {
    expect(defaultMemoryBudget(512 * MIB)).toBe(128 * MIB);
    expect(defaultMemoryBudget(256 * MIB)).toBe(64 * MIB);
    expect(defaultMemoryBudget(300 * MIB + 5)).toBe(75 * MIB);
    expect(defaultMemoryBudget(64 * MIB)).toBe(16 * MIB);
    expect(defaultMemoryBudget(25_276_157_952)).toBe(128 * MIB);
  });

  it("reads the limit of a process without a cgroup limit as the machine's memory", () => {
    const limit = processMemoryLimit();
    expect(limit).toBeGreaterThan(0);
    expect(Number.isSafeInteger(limit)).toBe(true);
  });
});
