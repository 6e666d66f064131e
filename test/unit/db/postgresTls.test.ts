import { generateKeyPairSync } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { postgresTls } from "../../../src/db/postgresTls.js";
import { ReplayableError } from "../../../src/errors.js";
import { clearSecrets, registerUrlSecret, scrubSecrets } from "../../../src/secrets/secrets.js";

afterEach(() => clearSecrets());

const CA = "-----BEGIN CERTIFICATE-----\nMIIB-ca\n-----END CERTIFICATE-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nMIIB-client\n-----END CERTIFICATE-----\n";
const pair = (passphrase?: string) =>
  generateKeyPairSync("ec", {
    namedCurve: "P-256",
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding:
      passphrase === undefined
        ? { type: "pkcs8", format: "pem" }
        : { type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase },
  }).privateKey;
const KEY = pair();
const files: Record<string, string> = {
  "/ca.pem": CA,
  "/client.pem": CERT,
  "/client.key": KEY,
  "/encrypted.key": pair("k3y-pass"),
  "/fake.key": "-----BEGIN PRIVATE KEY-----\nMIIE-key\n-----END PRIVATE KEY-----\n",
  "/not-pem": "hello",
};
const readFile = (path: string) => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
  return text;
};
const BASE = "postgres://app:pw@db.example.com:5432/app";
const tls = (query: string, env: Record<string, string> = {}) =>
  postgresTls(`${BASE}?${query}`, env, readFile);
const problem = (query: string, env: Record<string, string> = {}) => {
  try {
    tls(query, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ReplayableError);
    expect((error as ReplayableError).code).toBe("CONFIG_INVALID");
    return (error as Error).message;
  }
  throw new Error(`no error for ${query}`);
};

describe("postgresTls: sslmode as libpq documents it", () => {
  it("connects in plaintext without sslmode and with sslmode=disable, the URL passed on as given", () => {
    const none = postgresTls(BASE, {}, readFile);
    expect(none).toMatchObject({ ssl: false, mode: "disable", verifies: "nothing", connectionString: BASE });
    const disabled = tls("sslmode=disable&sslrootcert=/missing.pem&application_name=x");
    expect(disabled.ssl).toBe(false);
    expect(disabled.connectionString).toBe(`${BASE}?application_name=x`);
  });

  it("require encrypts without verifying; with sslrootcert it verifies the chain like verify-ca", () => {
    const require = tls("sslmode=require");
    expect(require.ssl).toEqual({ rejectUnauthorized: false, minVersion: "TLSv1.2" });
    expect(require.verifies).toBe("nothing");
    const withCa = tls("sslmode=require&sslrootcert=/ca.pem");
    expect(withCa.verifies).toBe("chain");
    expect(withCa.ssl).toMatchObject({ rejectUnauthorized: true, ca: CA });
    expect(withCa.ssl && withCa.ssl.checkServerIdentity?.("x", {} as never)).toBeUndefined();
  });

  it("verify-ca checks the chain but not the host name; verify-full checks both", () => {
    const ca = tls("sslmode=verify-ca&sslrootcert=/ca.pem");
    expect(ca.verifies).toBe("chain");
    expect(ca.ssl).toMatchObject({ rejectUnauthorized: true, ca: CA });
    expect(ca.ssl && typeof ca.ssl.checkServerIdentity).toBe("function");
    const full = tls("sslmode=verify-full&sslrootcert=/ca.pem");
    expect(full.verifies).toBe("chain-and-host");
    expect(full.ssl).toMatchObject({ rejectUnauthorized: true, ca: CA });
    expect(full.ssl && full.ssl.checkServerIdentity).toBeUndefined();
    expect(full.connectionString).toBe(BASE);
  });

  it("sslrootcert=system trusts Node's CA list, with verify-full only", () => {
    const system = tls("sslmode=verify-full&sslrootcert=system");
    expect(system.ssl).toMatchObject({ rejectUnauthorized: true });
    expect(system.ssl && system.ssl.ca).toBeUndefined();
    expect(problem("sslmode=verify-ca&sslrootcert=system")).toMatch(/use sslmode=verify-full/);
    expect(problem("sslmode=require&sslrootcert=system")).toMatch(/may not be used with sslrootcert=system/);
  });

  it("verify-ca and verify-full without sslrootcert name sslrootcert", () => {
    expect(problem("sslmode=verify-full")).toMatch(/DATABASE_URL: sslmode=verify-full needs sslrootcert=/);
    expect(problem("sslmode=verify-ca")).toMatch(/sslmode=verify-ca needs sslrootcert=/);
  });

  it("refuses allow and prefer (node-postgres has no fallback), naming what to use instead", () => {
    for (const mode of ["allow", "prefer"]) {
      const message = problem(`sslmode=${mode}`);
      expect(message).toMatch(new RegExp(`sslmode=${mode} is not supported: node-postgres cannot fall back`));
      expect(message).toMatch(/verify-full&sslrootcert=<CA file>.*require.*disable/);
    }
    expect(problem("sslmode=verify")).toMatch(/sslmode=verify is not one of disable, allow, prefer/);
  });

  it("reads a client certificate and key, both or neither; sslpassword becomes a secret", () => {
    const plainKey = tls("sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/client.pem&sslkey=/client.key");
    expect(plainKey.ssl).toMatchObject({ cert: CERT, key: KEY });
    const mutual = tls(
      "sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/client.pem&sslkey=/encrypted.key&sslpassword=k3y-pass",
    );
    expect(mutual.ssl).toMatchObject({ cert: CERT, passphrase: "k3y-pass" });
    expect(mutual.connectionString).toBe(BASE);
    expect(scrubSecrets("decrypting with k3y-pass failed")).toBe("decrypting with *** failed");
    expect(problem("sslmode=require&sslcert=/client.pem")).toMatch(/sslcert given without sslkey/);
    expect(problem("sslmode=require&sslkey=/client.key")).toMatch(/sslkey given without sslcert/);
  });

  it("names an encrypted key without sslpassword, a wrong sslpassword, and a key that is not one", () => {
    const withKey = (rest: string) => problem(`sslmode=require&sslcert=/client.pem&${rest}`);
    expect(withKey("sslkey=/encrypted.key")).toMatch(
      /sslkey=\/encrypted\.key is encrypted; give its password as sslpassword/,
    );
    const wrong = withKey("sslkey=/encrypted.key&sslpassword=nope-x");
    expect(wrong).toMatch(/sslpassword does not decrypt it/);
    expect(wrong).not.toContain("nope-x");
    expect(withKey("sslkey=/fake.key")).toMatch(/sslkey=\/fake\.key: not a usable private key/);
  });

  it("names a missing or non-PEM file, never its contents", () => {
    expect(problem("sslmode=verify-full&sslrootcert=/nope/ca.pem")).toMatch(
      /sslrootcert=\/nope\/ca\.pem: no such file; give the path of a PEM file with the CA certificate/,
    );
    const notPem = problem("sslmode=require&sslcert=/not-pem&sslkey=/client.key");
    expect(notPem).toMatch(/sslcert=\/not-pem: not a PEM file/);
    expect(notPem).not.toContain("hello");
    expect(problem("sslmode=require&sslcert=/client.pem&sslkey=/ca.pem")).not.toContain("MIIB");
  });

  it("asks for sslmode when certificate files are given without it", () => {
    expect(problem("sslrootcert=/ca.pem")).toMatch(
      /sslrootcert given without sslmode; add sslmode=verify-full/,
    );
  });

  it("takes each parameter from libpq's environment variable when the URL lacks it; the URL wins", () => {
    const fromEnv = postgresTls(BASE, { PGSSLMODE: "verify-ca", PGSSLROOTCERT: "/ca.pem" }, readFile);
    expect(fromEnv.verifies).toBe("chain");
    expect(tls("sslmode=disable", { PGSSLMODE: "verify-full" }).ssl).toBe(false);
  });

  it("names PGSSLMODE, not DATABASE_URL, when the environment gave the refused mode", () => {
    const fromEnv = problem("", { PGSSLMODE: "prefer" });
    expect(fromEnv).toMatch(/^invalid configuration:\n {2}PGSSLMODE: PGSSLMODE=prefer is not supported/);
    expect(fromEnv).toContain(
      "as PGSSLMODE or in DATABASE_URL (PGSSLMODE is read because DATABASE_URL has no sslmode)",
    );
    expect(fromEnv).not.toContain("DATABASE_URL:");
    expect(problem("", { PGSSLMODE: "verify-full" })).toMatch(
      / {2}PGSSLMODE: PGSSLMODE=verify-full needs sslrootcert/,
    );
    expect(problem("sslmode=require", { PGSSLROOTCERT: "/missing.pem" })).toMatch(
      / {2}PGSSLROOTCERT: PGSSLROOTCERT=\/missing.pem: /,
    );
    // The URL's own parameter is still DATABASE_URL's.
    expect(problem("sslmode=prefer", { PGSSLMODE: "require" })).toMatch(
      / {2}DATABASE_URL: sslmode=prefer is not/,
    );
  });

  it("refuses node-postgres's own ssl parameters and unsupported libpq ones", () => {
    expect(problem("ssl=true")).toMatch(/ssl is node-postgres's own parameter; use libpq's sslmode/);
    expect(problem("uselibpqcompat=true&sslmode=require")).toMatch(/uselibpqcompat is not needed/);
    expect(problem("sslmode=require&sslcrldir=/crl")).toMatch(/sslcrldir is not supported/);
  });

  it("maps the TLS version bounds and sslnegotiation", () => {
    const bounded = tls(
      "sslmode=require&sslminprotocolversion=TLSv1.3&sslmaxprotocolversion=TLSv1.3&sslnegotiation=direct",
    );
    expect(bounded.ssl).toMatchObject({ minVersion: "TLSv1.3", maxVersion: "TLSv1.3" });
    expect(bounded.sslnegotiation).toBe("direct");
    expect(bounded.connectionString).toBe(BASE);
    expect(problem("sslmode=require&sslminprotocolversion=1.2")).toMatch(/must be one of TLSv1, TLSv1.1/);
    expect(problem("sslnegotiation=direct")).toMatch(/sslnegotiation=direct needs sslmode=require/);
  });
});

describe("registerUrlSecret", () => {
  it("hides sslpassword and password given as URL parameters", () => {
    registerUrlSecret(`${BASE}?sslmode=require&sslpassword=k3y-%2Fpass&password=pw2-x`);
    expect(scrubSecrets("key k3y-/pass, pw2-x")).toBe("key ***, ***");
  });
});
