import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import bcrypt from "bcryptjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BasicAuth, MAX_WAITING, parseBasic } from "../../../src/metrics/basicAuth.js";
import { loadWebConfig } from "../../../src/metrics/webConfig.js";
import { ReplayableError } from "../../../src/errors.js";
import { makeTestCa, type CertificateFiles, type TestCa } from "../../helpers/testCertificates.js";

let ca: TestCa;
let server: CertificateFiles;
let dir: string;
const HASH = bcrypt.hashSync("s3cret", 4);

beforeAll(() => {
  ca = makeTestCa("web config test CA");
  server = ca.issue("localhost", ["DNS:localhost", "IP:127.0.0.1"]);
  dir = mkdtempSync(join(tmpdir(), "replayable-webconfig-"));
});
afterAll(() => {
  ca?.remove();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
function file(yaml: string): string {
  const path = join(dir, `web-${n++}.yml`);
  writeFileSync(path, yaml);
  return path;
}
function problem(yaml: string): string {
  const path = file(yaml);
  try {
    loadWebConfig(path);
  } catch (error) {
    expect(error).toBeInstanceOf(ReplayableError);
    expect((error as ReplayableError).code).toBe("CONFIG_INVALID");
    const message = (error as Error).message;
    expect(message).toContain(`REPLAYABLE_METRICS_WEB_CONFIG_FILE=${path}: `);
    return message;
  }
  throw new Error(`no error for ${yaml}`);
}

describe("loadWebConfig (the Prometheus exporters' web configuration)", () => {
  it("absent: plain HTTP without authentication", () => {
    expect(loadWebConfig(undefined)).toBeUndefined();
  });

  it("reads TLS, client certificates, headers and bcrypt users", () => {
    const config = loadWebConfig(
      file(
        [
          "tls_server_config:",
          `  cert_file: ${server.certFile}`,
          `  key_file: ${server.keyFile}`,
          `  client_ca_file: ${ca.certFile}`,
          "  client_auth_type: RequireAndVerifyClientCert",
          "  min_version: TLS13",
          "http_server_config:",
          "  headers:",
          "    X-Frame-Options: deny",
          "basic_auth_users:",
          `  prometheus: '${HASH}'`,
        ].join("\n"),
      ),
    );
    expect(config?.tls).toMatchObject({
      clientAuth: "RequireAndVerifyClientCert",
      minVersion: "TLSv1.3",
      maxVersion: "TLSv1.3",
    });
    expect(config?.tls?.cert).toContain("BEGIN CERTIFICATE");
    expect(config?.users.get("prometheus")).toBe(HASH);
    expect(config?.headers).toEqual({ "X-Frame-Options": "deny" });
  });

  it("an empty file or only users: plain HTTP", () => {
    expect(loadWebConfig(file(""))).toEqual({ tls: undefined, users: new Map(), headers: {} });
    expect(loadWebConfig(file(`basic_auth_users:\n  a: '${HASH}'\n`))?.tls).toBeUndefined();
  });

  it("names an unknown key with its path", () => {
    expect(problem(`tls_server_config:\n  cert_file: x\n  key_file: y\n  certfile: z\n`)).toMatch(
      /tls_server_config\.certfile: unknown key/,
    );
    expect(problem("basic_auth:\n  a: b\n")).toMatch(
      /: basic_auth: unknown key; did you mean basic_auth_users\?/,
    );
  });

  it("suggests the nearest known key for a misspelt one, at the top and nested", () => {
    expect(problem("basic_auth_user:\n  a: b\n")).toMatch(
      /basic_auth_user: unknown key; did you mean basic_auth_users\?/,
    );
    expect(problem(`tls_server_config:\n  cert_file: x\n  key_file: y\n  certfile: z\n`)).toMatch(
      /tls_server_config\.certfile: unknown key; did you mean cert_file\?/,
    );
    expect(problem("nonsense_key_here: 1\n")).not.toMatch(/did you mean/);
    expect(problem("http_server_config:\n  headers:\n    Strict-Transport-Securty: max-age=1\n")).toMatch(
      /http_server_config\.headers\.Strict-Transport-Securty: unknown key; did you mean Strict-Transport-Security\?/,
    );
    expect(problem("http_server_config:\n  headers:\n    x-frame-options: deny\n")).toMatch(
      /did you mean X-Frame-Options\?/,
    );
  });

  it("refuses options replayable does not implement, saying so", () => {
    expect(problem("rate_limit:\n  interval: 1s\n  burst: 2\n")).toMatch(/rate_limit is not supported/);
    expect(
      problem(
        `tls_server_config:\n  cert_file: ${server.certFile}\n  key_file: ${server.keyFile}\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n`,
      ),
    ).toMatch(/tls_server_config\.cipher_suites is not supported/);
  });

  it("names a missing certificate file, a missing key, a bad hash, bad YAML, a client CA without verification", () => {
    expect(problem("tls_server_config:\n  cert_file: /nope.crt\n  key_file: /nope.key\n")).toMatch(
      /tls_server_config\.cert_file \/nope\.crt: no such file/,
    );
    expect(problem(`tls_server_config:\n  cert_file: ${server.certFile}\n`)).toMatch(
      /tls_server_config\.key_file: missing/,
    );
    const badHash = problem("basic_auth_users:\n  prometheus: plaintext-password\n");
    expect(badHash).toMatch(/basic_auth_users\.prometheus: must be a bcrypt hash/);
    expect(badHash).not.toContain("plaintext-password");
    expect(problem("tls_server_config: [\n")).toMatch(/is not valid YAML/);
    expect(
      problem(
        `tls_server_config:\n  cert_file: ${server.certFile}\n  key_file: ${server.keyFile}\n  client_ca_file: ${ca.certFile}\n`,
      ),
    ).toMatch(/client_auth_type NoClientCert does not verify client certificates/);
    expect(
      problem(
        `tls_server_config:\n  cert_file: ${server.certFile}\n  key_file: ${server.keyFile}\n  client_auth_type: Sometimes\n`,
      ),
    ).toMatch(/client_auth_type: must be one of NoClientCert/);
  });

  it("refuses a key that does not match the certificate, without quoting either", () => {
    const other = ca.issue("other", ["DNS:other"]);
    const message = problem(
      `tls_server_config:\n  cert_file: ${server.certFile}\n  key_file: ${other.keyFile}\n`,
    );
    expect(message).toMatch(/key does not match the certificate/);
    expect(message).not.toContain("BEGIN");
  });
});

describe("BasicAuth", () => {
  const header = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

  it("accepts the right password, refuses a wrong one, an unknown user and a missing header", async () => {
    const auth = new BasicAuth(new Map([["prometheus", HASH]]));
    expect(await auth.check(header("prometheus", "s3cret"))).toBe(true);
    expect(await auth.check(header("prometheus", "s3cret"))).toBe(true); // remembered
    expect(await auth.check(header("prometheus", "wrong"))).toBe(false);
    expect(await auth.check(header("someone", "s3cret"))).toBe(false);
    expect(await auth.check(undefined)).toBe(false);
    expect(await auth.check("Bearer abc")).toBe(false);
  });

  it("compares first-seen passwords one at a time, and answers busy beyond MAX_WAITING without bcrypt", async () => {
    // A flood of distinct wrong passwords: each would cost one bcrypt on the consumer's thread.
    let running = 0;
    let most = 0;
    let calls = 0;
    const pending: (() => void)[] = [];
    const compare = async () => {
      calls++;
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => pending.push(resolve));
      running--;
      return false;
    };
    const auth = new BasicAuth(new Map([["prometheus", HASH]]), compare);
    const answers = Array.from({ length: MAX_WAITING + 3 }, (_, i) =>
      auth.verify(header("prometheus", `wrong-${i}`)),
    );
    expect(await answers[MAX_WAITING]).toBe("busy");
    expect(await answers[MAX_WAITING + 2]).toBe("busy");
    while (calls < MAX_WAITING || pending.length > 0) {
      const next = pending.shift();
      if (next === undefined) await new Promise((resolve) => setImmediate(resolve));
      else next();
    }
    expect(await Promise.all(answers.slice(0, MAX_WAITING))).toEqual(Array(MAX_WAITING).fill("refused"));
    expect(calls).toBe(MAX_WAITING);
    expect(most).toBe(1);
    // The queue drained: a first-seen pair is compared again.
    const later = auth.verify(header("prometheus", "another"));
    await new Promise((resolve) => setImmediate(resolve));
    pending.shift()?.();
    expect(await later).toBe("refused");
    expect(calls).toBe(MAX_WAITING + 1);
  });

  it("is open without users", async () => {
    expect(await new BasicAuth(new Map()).check(undefined)).toBe(true);
  });

  it("parses a password with colons", () => {
    expect(parseBasic(header("u", "a:b"))).toEqual({ user: "u", password: "a:b" });
  });
});
