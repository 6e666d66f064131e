/**
 * The Kafka security settings: parsing, the rules between them, the PEM files checked at start-up,
 * secrets from NAME_FILE, and that no secret value is ever echoed in a problem.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, parseConfig } from "../../src/config.js";
import { parseConfigFile } from "../../src/configFile/parseConfigFile.js";
import { ReplayableError } from "../../src/errors.js";
import { kafkaJsSecurity } from "../../src/kafka/kafkajsSecurity.js";
import { platformaticSecurity } from "../../src/kafka/platformatic/platformaticSecurity.js";
import { kafkaPrincipal } from "../../src/kafka/securityConfig.js";
import { readPemFiles } from "../../src/secrets/pemFiles.js";
import { clearSecrets, scrubSecrets } from "../../src/secrets/secrets.js";

let dir: string;
/** Certificates made with openssl for these tests: a CA, a client certificate and key signed by it. */
const files = { ca: "", cert: "", key: "", encryptedKey: "", other: "", otherKey: "" };

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: "ignore" });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "replayable-pem-"));
  const at = (name: string) => join(dir, name);
  openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    at("ca.key"),
    "-out",
    at("ca.pem"),
    "-days",
    "2",
    "-subj",
    "/CN=unit-ca",
  );
  openssl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    at("client.key"),
    "-out",
    at("client.csr"),
    "-subj",
    "/O=unit/CN=alice",
  );
  openssl(
    "x509",
    "-req",
    "-in",
    at("client.csr"),
    "-CA",
    at("ca.pem"),
    "-CAkey",
    at("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-out",
    at("client.pem"),
  );
  openssl(
    "pkcs8",
    "-topk8",
    "-in",
    at("client.key"),
    "-out",
    at("client.enc.key"),
    "-passout",
    "pass:key-pass-1",
  );
  openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    at("other.key"),
    "-out",
    at("other.pem"),
    "-days",
    "2",
    "-subj",
    "/CN=other",
  );
  Object.assign(files, {
    ca: at("ca.pem"),
    cert: at("client.pem"),
    key: at("client.key"),
    encryptedKey: at("client.enc.key"),
    other: at("other.pem"),
    otherKey: at("other.key"),
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => clearSecrets());

function problems(env: Record<string, string>): string {
  const result = parseConfig(env);
  if (result.ok) throw new Error(`expected ${JSON.stringify(env)} to be refused`);
  return result.problems.join("\n");
}

const SASL = {
  KAFKA_SECURITY_PROTOCOL: "SASL_SSL",
  KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
  KAFKA_SASL_USERNAME: "alice",
};

describe("Kafka security settings", () => {
  it("default to PLAINTEXT: no TLS, no SASL, principal User:ANONYMOUS", () => {
    const { security } = loadConfig({}).kafka;
    expect(security).toMatchObject({ protocol: "PLAINTEXT", sasl: undefined, ssl: undefined });
    expect(kafkaJsSecurity(security)).toEqual({ ssl: undefined, sasl: undefined });
    expect(platformaticSecurity(security)).toEqual({});
    expect(kafkaPrincipal(security)).toBe("User:ANONYMOUS");
  });

  it("SASL_SSL with SCRAM: KafkaJS's sasl and ssl options, verification on, principal User:<name>", () => {
    const { security } = loadConfig({
      ...SASL,
      KAFKA_SASL_PASSWORD: "pw-1",
      KAFKA_SSL_CA_LOCATION: files.ca,
    }).kafka;
    const options = kafkaJsSecurity(security);
    expect(options.sasl).toEqual({ mechanism: "scram-sha-512", username: "alice", password: "pw-1" });
    expect(options.ssl).toMatchObject({ rejectUnauthorized: true });
    expect(options.ssl?.ca).toHaveLength(1);
    expect(options.ssl?.checkServerIdentity).toBeUndefined();
    expect(kafkaPrincipal(security)).toBe("User:alice");
    // The same settings for @platformatic/kafka (issue 30): Kafka's mechanism names, the same TLS options.
    const other = platformaticSecurity(security);
    expect(other.sasl).toEqual({ mechanism: "SCRAM-SHA-512", username: "alice", password: "pw-1" });
    expect(other.tls).toEqual(options.ssl);
  });

  it("accepts Kafka's names in any case, and turning verification or host-name checks off", () => {
    const { security } = loadConfig({
      KAFKA_SECURITY_PROTOCOL: "ssl",
      KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION: "false",
      KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: "none",
    }).kafka;
    expect(security.protocol).toBe("SSL");
    const { ssl } = kafkaJsSecurity(security);
    expect(ssl?.rejectUnauthorized).toBe(false);
    expect(ssl?.checkServerIdentity?.("h", {} as never)).toBeUndefined();
  });

  it("mutual TLS: the certificate, the key (encrypted, with its password) and the principal from the subject", () => {
    const { security } = loadConfig({
      KAFKA_SECURITY_PROTOCOL: "SSL",
      KAFKA_SSL_CA_LOCATION: files.ca,
      KAFKA_SSL_CERTIFICATE_LOCATION: files.cert,
      KAFKA_SSL_KEY_LOCATION: files.encryptedKey,
      KAFKA_SSL_KEY_PASSWORD: "key-pass-1",
    }).kafka;
    expect(kafkaJsSecurity(security).ssl).toMatchObject({ passphrase: "key-pass-1" });
    expect(platformaticSecurity(security).tls).toMatchObject({ passphrase: "key-pass-1" });
    expect(kafkaPrincipal(security)).toBe("User:CN=alice,O=unit");
  });

  it("OAUTHBEARER needs a token provider; the one given is used", async () => {
    const { security } = loadConfig({
      KAFKA_SECURITY_PROTOCOL: "SASL_SSL",
      KAFKA_SASL_MECHANISM: "OAUTHBEARER",
    }).kafka;
    expect(() => kafkaJsSecurity(security)).toThrow(
      /KAFKA_SASL_MECHANISM=OAUTHBEARER: needs a token provider/,
    );
    const { sasl } = kafkaJsSecurity(security, () => Promise.resolve({ value: "token-1" }));
    expect(sasl?.mechanism).toBe("oauthbearer");
    const provider = (sasl as { oauthBearerProvider: () => Promise<{ value: string }> }).oauthBearerProvider;
    expect(await provider()).toEqual({ value: "token-1" });
    expect(kafkaPrincipal(security)).toBeUndefined();
    expect(() => platformaticSecurity(security)).toThrow(
      /KAFKA_SASL_MECHANISM=OAUTHBEARER: needs a token provider/,
    );
    const other = platformaticSecurity(security, () => Promise.resolve({ value: "token-2" })).sasl;
    expect(other?.mechanism).toBe("OAUTHBEARER");
    expect(await other?.token?.()).toBe("token-2");
  });

  it.each<[string, Record<string, string>, string]>([
    [
      "an unknown protocol",
      { KAFKA_SECURITY_PROTOCOL: "TLS" },
      "KAFKA_SECURITY_PROTOCOL=TLS: must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
    ],
    [
      "GSSAPI",
      { ...SASL, KAFKA_SASL_MECHANISM: "GSSAPI" },
      "KAFKA_SASL_MECHANISM=GSSAPI: must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (GSSAPI/Kerberos is not supported)",
    ],
    [
      "SASL without a mechanism",
      { KAFKA_SECURITY_PROTOCOL: "SASL_SSL" },
      "KAFKA_SASL_MECHANISM: is required with KAFKA_SECURITY_PROTOCOL=SASL_SSL",
    ],
    [
      "SCRAM without a password",
      SASL,
      "KAFKA_SASL_PASSWORD: is required with KAFKA_SASL_MECHANISM=SCRAM-SHA-512 (or KAFKA_SASL_PASSWORD_FILE)",
    ],
    [
      "a SASL setting without SASL",
      { KAFKA_SASL_USERNAME: "alice" },
      "KAFKA_SASL_USERNAME=alice: is set but KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use SASL",
    ],
    [
      "a TLS setting without TLS",
      { KAFKA_SSL_CA_LOCATION: "/ca.pem" },
      "KAFKA_SSL_CA_LOCATION=/ca.pem: is set but KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use TLS",
    ],
    [
      "a certificate without its key",
      { KAFKA_SECURITY_PROTOCOL: "SSL", KAFKA_SSL_CERTIFICATE_LOCATION: "/c.pem" },
      "KAFKA_SSL_KEY_LOCATION: is required with KAFKA_SSL_CERTIFICATE_LOCATION",
    ],
    [
      "a key password without a key",
      { KAFKA_SECURITY_PROTOCOL: "SSL", KAFKA_SSL_KEY_PASSWORD: "kp" },
      "KAFKA_SSL_KEY_PASSWORD: is set without KAFKA_SSL_KEY_LOCATION",
    ],
    [
      "a verification value",
      { KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION: "no" },
      'KAFKA_ENABLE_SSL_CERTIFICATE_VERIFICATION=no: must be "true" or "false"',
    ],
  ])("refuses %s, naming the setting", (_case, env, expected) => {
    expect(problems(env)).toContain(expected);
  });

  it("refuses TLS files that are missing, not PEM, or a key that is not the certificate's", () => {
    const text = problems({
      KAFKA_SECURITY_PROTOCOL: "SSL",
      KAFKA_SSL_CA_LOCATION: join(dir, "missing.pem"),
      KAFKA_SSL_CERTIFICATE_LOCATION: files.cert,
      KAFKA_SSL_KEY_LOCATION: files.otherKey,
    });
    expect(text).toContain(`KAFKA_SSL_CA_LOCATION=${join(dir, "missing.pem")}: cannot read the file: ENOENT`);
    expect(text).toContain(
      `KAFKA_SSL_KEY_LOCATION=${files.otherKey}: is not the private key of the certificate`,
    );
    expect(problems({ KAFKA_SECURITY_PROTOCOL: "SSL", KAFKA_SSL_CA_LOCATION: files.key })).toContain(
      "KAFKA_SSL_CA_LOCATION=" + files.key + ": holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
    );
  });

  it("an encrypted key needs its password, and a wrong one is named without its value", () => {
    const base = {
      KAFKA_SECURITY_PROTOCOL: "SSL",
      KAFKA_SSL_CERTIFICATE_LOCATION: files.cert,
      KAFKA_SSL_KEY_LOCATION: files.encryptedKey,
    };
    expect(problems(base)).toContain("the key is encrypted; set KAFKA_SSL_KEY_PASSWORD");
    const wrong = problems({ ...base, KAFKA_SSL_KEY_PASSWORD: "not-the-pass-9" });
    expect(wrong).toContain("KAFKA_SSL_KEY_PASSWORD: does not decrypt the key in KAFKA_SSL_KEY_LOCATION");
    expect(wrong).not.toContain("not-the-pass-9");
  });

  it("a client certificate not valid now, or a CA file whose certificates all expired, names the date", () => {
    const later = new Date(Date.now() + 10 * 86_400_000);
    const earlier = new Date(Date.now() - 10 * 86_400_000);
    const locations = { ca: files.ca, certificate: files.cert, key: files.key, keyPassword: undefined };
    const expired = readPemFiles(locations, later).problems.map((p) => `${p.variable}: ${p.message}`);
    expect(expired).toEqual([
      expect.stringMatching(
        /^KAFKA_SSL_CA_LOCATION: the CA certificate \(CN=unit-ca\) expired on \d{4}-\d\d-\d\dT/,
      ),
      expect.stringMatching(
        /^KAFKA_SSL_CERTIFICATE_LOCATION: the client certificate \(O=unit, CN=alice\) expired on /,
      ),
    ]);
    const early = readPemFiles(locations, earlier).problems.map((p) => p.message);
    expect(early.join("\n")).toContain("the client certificate (O=unit, CN=alice) is not valid before ");
  });
});

describe("the config file's kafkaOauthBearerProvider", () => {
  it("reaches the security settings; a value that is not a function is a problem", () => {
    const provider = () => Promise.resolve({ value: "t" });
    const parsed = parseConfigFile("/app/replayable.config.ts", { kafkaOauthBearerProvider: provider });
    expect(parsed.problems).toEqual([]);
    const config = loadConfig(
      { KAFKA_SECURITY_PROTOCOL: "SASL_SSL", KAFKA_SASL_MECHANISM: "OAUTHBEARER" },
      {},
      parsed.settings,
    );
    expect(config.kafka.security.oauthBearerProvider).toBe(provider);
    expect(kafkaJsSecurity(config.kafka.security).sasl?.mechanism).toBe("oauthbearer");
    expect(
      parseConfigFile("/app/replayable.config.ts", { kafkaOauthBearerProvider: "token" }).problems,
    ).toEqual([
      "  replayable.config.ts: kafkaOauthBearerProvider: must be a function returning a Promise of { value: token }",
    ]);
  });
});

describe("secrets from NAME_FILE", () => {
  it("read the value, trailing newline dropped, registered as a secret", () => {
    const file = join(dir, "sasl-password");
    writeFileSync(file, "from-file-pw-7\n");
    const config = loadConfig({ ...SASL, KAFKA_SASL_PASSWORD_FILE: file, KAFKA_SSL_CA_LOCATION: files.ca });
    expect(config.kafka.security.sasl?.password).toBe("from-file-pw-7");
    expect(scrubSecrets("login with from-file-pw-7")).toBe("login with ***");
    const urlFile = join(dir, "database-url");
    writeFileSync(urlFile, "postgres://app:db-pw-3@127.0.0.1:5432/app\r\n");
    expect(loadConfig({ DATABASE_URL_FILE: urlFile }).databaseUrl).toBe(
      "postgres://app:db-pw-3@127.0.0.1:5432/app",
    );
    expect(scrubSecrets("db-pw-3")).toBe("***");
  });

  it("refuses NAME and NAME_FILE both set, and an unreadable file naming NAME_FILE and its path", () => {
    const file = join(dir, "both");
    writeFileSync(file, "x");
    expect(
      problems({ ...SASL, KAFKA_SASL_PASSWORD: "inline-pw-5", KAFKA_SASL_PASSWORD_FILE: file }),
    ).toContain("KAFKA_SASL_PASSWORD_FILE=" + file + ": and KAFKA_SASL_PASSWORD are both set; set only one");
    const missing = join(dir, "nope");
    expect(problems({ KAFKA_SSL_KEY_PASSWORD_FILE: missing })).toContain(
      `KAFKA_SSL_KEY_PASSWORD_FILE=${missing}: cannot read ${missing}: ENOENT`,
    );
    const unreadable = join(dir, "unreadable");
    writeFileSync(unreadable, "secret-content-8");
    chmodSync(unreadable, 0o000);
    const text = problems({ DATABASE_URL_FILE: unreadable });
    if (process.getuid?.() !== 0) expect(text).toContain(`DATABASE_URL_FILE=${unreadable}: cannot read`);
    expect(text).not.toContain("secret-content-8");
  });

  it("a NAME_FILE that cannot be read is one problem line, not also NAME 'is required'", () => {
    const missing = join(dir, "no-such-password");
    const text = problems({ ...SASL, KAFKA_SASL_PASSWORD_FILE: missing });
    expect(text).toContain(`KAFKA_SASL_PASSWORD_FILE=${missing}: cannot read ${missing}: ENOENT`);
    expect(text).not.toContain("KAFKA_SASL_PASSWORD: is required");
    const empty = join(dir, "empty-password");
    writeFileSync(empty, "\n");
    expect(problems({ ...SASL, KAFKA_SASL_PASSWORD_FILE: empty })).not.toContain("is required");
  });

  it("a bad value read from a file is reported with where it came from, never the value", () => {
    const file = join(dir, "bad-url");
    writeFileSync(file, "mysql://root:file-pw-2@h/db\n");
    const text = problems({ DATABASE_URL_FILE: file });
    expect(text).toContain(`(from DATABASE_URL_FILE=${file}): must be a postgres:// or postgresql:// URL`);
    expect(text).not.toContain("file-pw-2");
  });

  it("a secret setting is never echoed in a problem line", () => {
    const error = (() => {
      try {
        loadConfig({ KAFKA_SASL_PASSWORD: "echo-me-not-4" });
      } catch (e) {
        return e as ReplayableError;
      }
      throw new Error("expected a problem");
    })();
    expect(error.message).toContain(
      "KAFKA_SASL_PASSWORD: is set but KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use SASL",
    );
    expect(error.message).not.toContain("echo-me-not-4");
  });
});
