/**
 * Certificate authorities and certificates made in the test run with the `openssl` command
 * (OpenSSL 3), in a temp folder: never committed. For TLS tests of PostgreSQL and /metrics.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A certificate and its private key, as PEM files. */
export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** A test CA that issues certificates into its folder. */
export interface TestCa extends CertificateFiles {
  /**
   * Issues a certificate for `commonName` with the subject alternative names `altNames`
   * (`DNS:localhost`, `IP:127.0.0.1`), valid for a day; `client` marks it for client authentication.
   */
  issue(commonName: string, altNames: readonly string[], options?: { client?: boolean }): CertificateFiles;
  /** Removes the folder with every key and certificate. */
  remove(): void;
}

function openssl(args: readonly string[]): void {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/**
 * Makes a self-signed CA (EC P-256 keys, as every current TLS library accepts) named `name`.
 * @throws when `openssl` is missing or fails (its stderr in the message).
 */
export function makeTestCa(name: string): TestCa {
  const dir = mkdtempSync(join(tmpdir(), "replayable-ca-"));
  const certFile = join(dir, "ca.crt");
  const keyFile = join(dir, "ca.key");
  const keyArgs = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl([
    "req",
    "-x509",
    ...keyArgs,
    "-keyout",
    keyFile,
    "-out",
    certFile,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
  ]);
  let serial = 1;
  return {
    certFile,
    keyFile,
    issue(commonName, altNames, options = {}) {
      const base = join(dir, `${commonName.replace(/[^a-z0-9]/gi, "_")}-${serial}`);
      const ext = `${base}.ext`;
      writeFileSync(
        ext,
        [
          "basicConstraints=CA:FALSE",
          `extendedKeyUsage=${options.client === true ? "clientAuth" : "serverAuth"}`,
          ...(altNames.length > 0 ? [`subjectAltName=${altNames.join(",")}`] : []),
          "",
        ].join("\n"),
      );
      openssl([
        "req",
        "-new",
        ...keyArgs,
        "-keyout",
        `${base}.key`,
        "-out",
        `${base}.csr`,
        "-subj",
        `/CN=${commonName}`,
      ]);
      openssl([
        "x509",
        "-req",
        "-in",
        `${base}.csr`,
        "-CA",
        certFile,
        "-CAkey",
        keyFile,
        "-set_serial",
        String(serial++),
        "-days",
        "1",
        "-extfile",
        ext,
        "-out",
        `${base}.crt`,
      ]);
      return { certFile: `${base}.crt`, keyFile: `${base}.key` };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
