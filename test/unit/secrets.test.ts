import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, redactUrl } from "../../src/config.js";
import {
  clearSecrets,
  registerEnvSecrets,
  registerSecret,
  registerUrlSecret,
  scrubLogLine,
  scrubSecrets,
} from "../../src/secrets/secrets.js";

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

  it("registers PGPASSWORD and the settings' secrets, not another program's *_SECRET or *_PASSWORD", () => {
    registerEnvSecrets({
      PGPASSWORD: "pgpw",
      KAFKA_SASL_PASSWORD: "saslpw",
      KAFKA_SSL_KEY_PASSWORD: "keypw",
      APP_SECRET: "0",
      POSTGRES_PASSWORD: "postgres",
      HOME: "/root",
    });
    expect(scrubSecrets("pgpw saslpw keypw /root")).toBe("*** *** *** /root");
    expect(scrubSecrets('{"level":30,"time":"2026-12-01T05:00:00.000Z","msg":"postgres"}')).toBe(
      '{"level":30,"time":"2026-12-01T05:00:00.000Z","msg":"postgres"}',
    );
  });

  it("hides the password and sslpassword query parameters of a URL in the form they are written in (percent-encoded, + for a space)", () => {
    const url = "postgres://postgres@127.0.0.1:5432/db?password=Pg%26PwQ&sslpassword=K%26y%23P%20w+1";
    registerUrlSecret(url);
    const shown = scrubSecrets(`starting {"database":"${url}"}`);
    for (const form of ["Pg%26PwQ", "Pg&PwQ", "K%26y%23P%20w+1", "K&y#P w 1"])
      expect(shown).not.toContain(form);
    expect(scrubSecrets("error: Pg&PwQ and K&y#P w 1")).toBe("error: *** and ***");
    expect(redactUrl(url)).toBe("postgres://postgres@127.0.0.1:5432/db?password=***&sslpassword=***");
  });

  it("hides a password holding an unencoded @ whole, and registers it whole", () => {
    const url = "postgres://postgres:p@ssXYZ@127.0.0.1:99999/brk1";
    expect(scrubSecrets(`cannot connect to ${url}`)).toBe(
      "cannot connect to postgres://postgres:***@127.0.0.1:99999/brk1",
    );
    expect(redactUrl(url)).toBe("postgres://postgres:***@127.0.0.1:99999/brk1");
    registerUrlSecret(url);
    expect(scrubSecrets("p@ssXYZ postgres")).toBe("*** postgres");
  });

  it("keeps a log line valid JSON when a short secret appears in its numbers and keys", () => {
    registerSecret("30");
    const line = '{"level":30,"offset":"130","msg":"password 30"}\n';
    const scrubbed = scrubLogLine(line);
    expect(JSON.parse(scrubbed)).toEqual({ level: 30, offset: "1***", msg: "password ***" });
    expect(scrubbed.endsWith("\n")).toBe(true);
    expect(scrubLogLine("not json 30\n")).toBe("not json ***\n");
  });

  it("loadConfig registers the password of DATABASE_URL, even when the config is invalid", () => {
    expect(() =>
      loadConfig({ DATABASE_URL: "postgres://u:hunter2@h/db", REPLAYABLE_MAX_BATCH_RECORDS: "lots" }),
    ).toThrow(/REPLAYABLE_MAX_BATCH_RECORDS/);
    expect(scrubSecrets("hunter2")).toBe("***");
  });
});

describe("a DATABASE_URL password made of reserved characters (issue 26 item 5)", () => {
  // RFC 3986's reserved characters, plus % and a space: generated and base64 passwords hold them unencoded.
  const reserved = [...":/?#[]@!$&'()*+,;=%", " "];
  const passwords = [
    ...reserved.map((c) => `Pw${c}x9Q`),
    `Pw${reserved.join("")}x9Q`,
    "ab@cd/ef",
    "a?x=1@b",
    "12/x",
    // An @ and then a ? unencoded: the URL parses, with the password's head as its password and
    // the text between as its host (a breaker found `Sec@retpart?More` shown as host `retpart`).
    "Sec@retpart?More",
    "a@b?c&d",
    "a@b#c",
  ];

  it.each(passwords)(
    "hides the password %j in the URL's redaction, the scrubbed text and the config error",
    (password) => {
      const url = `postgres://app:${password}@db.example:5432/app?sslmode=disable`;
      const tail = password.slice(1);
      expect(redactUrl(url)).toBe("postgres://app:***@db.example:5432/app?sslmode=disable");
      // Free text has no bounds but whitespace: a URL in it ends at the first space.
      if (!/\s/.test(password)) expect(scrubSecrets(`cannot connect to ${url} now`)).not.toContain(tail);
      registerUrlSecret(url);
      expect(scrubSecrets(`cannot connect to ${url} now`)).not.toContain(tail);
      expect(scrubSecrets(`password "${password}" rejected`)).toBe('password "***" rejected');
      let message = "";
      try {
        loadConfig({ DATABASE_URL: url, REPLAYABLE_MAX_BATCH_RECORDS: "lots" });
      } catch (error) {
        message = String(error);
      }
      expect(message).toMatch(/REPLAYABLE_MAX_BATCH_RECORDS/);
      expect(scrubSecrets(message)).not.toContain(tail);
      expect(message).not.toContain(tail);
    },
  );

  it("keeps an @ in the query out of the password: only the userinfo is hidden", () => {
    const url = "postgres://app:pw@db/app?application_name=a@b";
    expect(redactUrl(url)).toBe("postgres://app:***@db/app?application_name=a@b");
    registerUrlSecret(url);
    expect(scrubSecrets("a@b app db")).toBe("a@b app db");
  });
});
