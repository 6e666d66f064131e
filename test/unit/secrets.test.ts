import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import {
  clearSecrets,
  registerEnvSecrets,
  registerSecret,
  registerUrlSecret,
  scrubSecrets,
} from "../../src/secrets.js";

afterEach(() => clearSecrets());

describe("scrubSecrets", () => {
  it("hides the password of any URL, registered or not", () => {
    expect(scrubSecrets("connect postgres://app:s3cret@db:5432/x failed")).toBe(
      "connect postgres://app:***@db:5432/x failed",
    );
    expect(scrubSecrets('{"url":"amqp://u:p%40ss@h/v"}')).toBe('{"url":"amqp://u:***@h/v"}');
    expect(scrubSecrets("postgres://app@db/x")).toBe("postgres://app@db/x");
  });

  it("hides a registered secret wherever it appears, in raw, percent-decoded and JSON-escaped forms", () => {
    registerUrlSecret("postgres://app:p%2Fw%22d@db/x");
    expect(scrubSecrets('error: password "p/w"d" rejected')).toBe('error: password "***" rejected');
    expect(scrubSecrets('{"msg":"p/w\\"d"}')).toBe('{"msg":"***"}');
    expect(scrubSecrets("raw p%2Fw%22d")).toBe("raw ***");
  });

  it("hides the longest secret whole when one contains another", () => {
    registerSecret("abc");
    registerSecret("abcdef");
    expect(scrubSecrets("x abcdef y abc")).toBe("x *** y ***");
  });

  it("registers PGPASSWORD and *_PASSWORD / *_SECRET variables, nothing else", () => {
    registerEnvSecrets({
      PGPASSWORD: "pgpw",
      KAFKA_SASL_PASSWORD: "saslpw",
      APP_SECRET: "sec1",
      HOME: "/root",
    });
    expect(scrubSecrets("pgpw saslpw sec1 /root")).toBe("*** *** *** /root");
  });

  it("loadConfig registers the password of DATABASE_URL, even when the config is invalid", () => {
    expect(() =>
      loadConfig({ DATABASE_URL: "postgres://u:hunter2@h/db", REPLAYABLE_MAX_BATCH_RECORDS: "lots" }),
    ).toThrow(/REPLAYABLE_MAX_BATCH_RECORDS/);
    expect(scrubSecrets("hunter2")).toBe("***");
  });
});
