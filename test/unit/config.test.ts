import { describe, expect, it } from "vitest";
import { loadConfig, redactUrl } from "../../src/config.js";
import { ReplayableError } from "../../src/errors.js";

function problems(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ReplayableError);
    expect((error as ReplayableError).code).toBe("CONFIG_INVALID");
    return (error as Error).message;
  }
  throw new Error("expected loadConfig to throw");
}

describe("loadConfig", () => {
  it("gives defaults and a frozen object", () => {
    const config = loadConfig({});
    expect(config.kafka.brokers).toEqual(["127.0.0.1:9092"]);
    expect(config.groupId).toBe("ledger");
    expect(config.maxBatchRecords).toBe(500);
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
    expect(message).toMatch(/REPLAYABLE_MAX_BATCH_RECORDS=0: must be at least 1 records/);
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

  it("refuses a heartbeat interval above a third of the session timeout", () => {
    expect(
      problems({ REPLAYABLE_SESSION_TIMEOUT_MS: "6000", REPLAYABLE_HEARTBEAT_INTERVAL_MS: "3000" }),
    ).toMatch(/REPLAYABLE_HEARTBEAT_INTERVAL_MS=3000: must be at most a third/);
  });
});
