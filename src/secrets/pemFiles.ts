/**
 * The TLS files of the Kafka settings, read and checked once at start-up: each must be readable
 * and hold PEM; a client certificate must be valid now, a CA file must hold a certificate that is
 * valid now, and the key must decrypt and belong to the certificate. A TLS handshake would fail
 * on each of these later with a vaguer message (node:crypto X509Certificate, createPrivateKey).
 */
import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { errorMessage } from "../errors.js";
import type { PemFile } from "../kafka/securityConfig.js";
import { registerSecret } from "./secrets.js";

/** A problem with one setting, without any secret in it. */
export interface SettingProblem {
  readonly variable: string;
  readonly message: string;
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const PRIVATE_KEY = /-----BEGIN (?:(?:RSA |EC |ENCRYPTED )?PRIVATE KEY)-----/;

/** Where the TLS files are (paths as configured) and the key's passphrase. */
export interface PemLocations {
  readonly ca: string | undefined;
  readonly certificate: string | undefined;
  readonly key: string | undefined;
  readonly keyPassword: string | undefined;
}

/** The files read, the client certificate's subject (for the principal), and every problem. */
export interface PemFilesRead {
  readonly ca: PemFile | undefined;
  readonly certificate: PemFile | undefined;
  readonly key: PemFile | undefined;
  /** The client certificate's subject as node:crypto gives it (`CN=alice`, one RDN a line). */
  readonly certificateSubject: string | undefined;
  readonly problems: readonly SettingProblem[];
}

/**
 * Reads and checks the CA file, the client certificate and its key.
 * @param now the time validity is checked at (default: now).
 */
export function readPemFiles(locations: PemLocations, now = new Date()): PemFilesRead {
  const problems: SettingProblem[] = [];
  const read = (variable: string, location: string | undefined): PemFile | undefined => {
    if (location === undefined) return undefined;
    try {
      return { location, pem: readFileSync(location, "utf8") };
    } catch (error) {
      problems.push({ variable, message: `cannot read the file: ${errorMessage(error)}` });
      return undefined;
    }
  };
  const ca = read("KAFKA_SSL_CA_LOCATION", locations.ca);
  if (ca !== undefined) problems.push(...caProblems(ca, now));
  const certificate = read("KAFKA_SSL_CERTIFICATE_LOCATION", locations.certificate);
  const key = read("KAFKA_SSL_KEY_LOCATION", locations.key);
  if (key !== undefined) registerSecret(key.pem.trim());
  const cert = certificate === undefined ? undefined : clientCertificate(certificate, now, problems);
  const keyObject = key === undefined ? undefined : privateKey(key, locations.keyPassword, problems);
  if (cert !== undefined && keyObject !== undefined && !cert.checkPrivateKey(keyObject)) {
    problems.push({
      variable: "KAFKA_SSL_KEY_LOCATION",
      message: `is not the private key of the certificate in KAFKA_SSL_CERTIFICATE_LOCATION (${certificate?.location}); give the key the certificate was issued for`,
    });
  }
  return { ca, certificate, key, certificateSubject: cert?.subject, problems };
}

function certificates(pem: string): X509Certificate[] | string {
  const blocks = pem.match(CERTIFICATE) ?? [];
  if (blocks.length === 0) return "holds no PEM certificate (-----BEGIN CERTIFICATE-----)";
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch (error) {
    return `holds a certificate that does not parse: ${errorMessage(error)}`;
  }
}

function caProblems(file: PemFile, now: Date): SettingProblem[] {
  const variable = "KAFKA_SSL_CA_LOCATION";
  const parsed = certificates(file.pem);
  if (typeof parsed === "string") return [{ variable, message: parsed }];
  // A file may hold an old and a new CA while a CA is rotated: one valid certificate is enough.
  if (parsed.some((c) => validAt(c, now))) return [];
  const first = parsed[0]!;
  const when =
    new Date(first.validFrom) > now
      ? `is not valid before ${isoDate(first.validFrom)}`
      : `expired on ${isoDate(first.validTo)}`;
  return [
    {
      variable,
      message: `the CA certificate (${oneLine(first.subject)}) ${when}; give the cluster's current CA certificate`,
    },
  ];
}

function clientCertificate(
  file: PemFile,
  now: Date,
  problems: SettingProblem[],
): X509Certificate | undefined {
  const variable = "KAFKA_SSL_CERTIFICATE_LOCATION";
  const parsed = certificates(file.pem);
  if (typeof parsed === "string") {
    problems.push({ variable, message: parsed });
    return undefined;
  }
  const cert = parsed[0]!;
  if (new Date(cert.validTo) < now) {
    problems.push({
      variable,
      message: `the client certificate (${oneLine(cert.subject)}) expired on ${isoDate(cert.validTo)}; renew it`,
    });
  } else if (new Date(cert.validFrom) > now) {
    problems.push({
      variable,
      message: `the client certificate (${oneLine(cert.subject)}) is not valid before ${isoDate(cert.validFrom)}; check the clock or the certificate`,
    });
  }
  return cert;
}

function privateKey(
  file: PemFile,
  passphrase: string | undefined,
  problems: SettingProblem[],
): KeyObject | undefined {
  if (!PRIVATE_KEY.test(file.pem)) {
    problems.push({
      variable: "KAFKA_SSL_KEY_LOCATION",
      message: "holds no PEM private key (-----BEGIN PRIVATE KEY----- or similar)",
    });
    return undefined;
  }
  try {
    return createPrivateKey({ key: file.pem, format: "pem", passphrase: passphrase ?? "" });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const encrypted = /ENCRYPTED|Proc-Type: 4,ENCRYPTED/.test(file.pem);
    problems.push(
      encrypted && passphrase === undefined
        ? {
            variable: "KAFKA_SSL_KEY_LOCATION",
            message: "the key is encrypted; set KAFKA_SSL_KEY_PASSWORD (or KAFKA_SSL_KEY_PASSWORD_FILE)",
          }
        : encrypted
          ? {
              variable: "KAFKA_SSL_KEY_PASSWORD",
              message: "does not decrypt the key in KAFKA_SSL_KEY_LOCATION",
            }
          : {
              variable: "KAFKA_SSL_KEY_LOCATION",
              message: `the key does not parse${typeof code === "string" ? ` (${code})` : ""}`,
            },
    );
    return undefined;
  }
}

function validAt(cert: X509Certificate, now: Date): boolean {
  return new Date(cert.validFrom) <= now && now <= new Date(cert.validTo);
}

function isoDate(text: string): string {
  return new Date(text).toISOString();
}

function oneLine(subject: string): string {
  return subject.split("\n").filter(Boolean).join(", ");
}
