/**
 * The metrics endpoint behind REPLAYABLE_METRICS_WEB_CONFIG_FILE (the Prometheus exporters' web
 * configuration): a real Prometheus scrapes /metrics of `replayable run` over HTTPS with basic auth
 * (scrape config `tls_config.ca_file` and `basic_auth`); a wrong password gets 401; plain HTTP to
 * the TLS port fails; /healthz and /readyz's status stay open for probes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import bcrypt from "bcryptjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { produceLedger } from "../../helpers/ledger.js";
import { startCliInTest } from "../../helpers/process.js";
import { startPrometheus } from "../../helpers/prometheus.js";
import { uniqueName, useStack, waitFor, waitForCaughtUp } from "../../helpers/stack.js";
import { makeTestCa, type CertificateFiles, type TestCa } from "../../helpers/testCertificates.js";
import { Registry } from "prom-client";
import { startHttpServer } from "../../../src/metrics/server.js";

const stack = useStack();
let ca: TestCa;
let dir: string;
let webConfig: string;
const PASSWORD = "scrape-s3cret";

beforeAll(() => {
  ca = makeTestCa("metrics test CA");
  const server = ca.issue("localhost", ["DNS:localhost", "IP:127.0.0.1"]);
  dir = mkdtempSync(join(tmpdir(), "replayable-web-"));
  webConfig = join(dir, "web.yml");
  writeFileSync(
    webConfig,
    [
      "tls_server_config:",
      `  cert_file: ${server.certFile}`,
      `  key_file: ${server.keyFile}`,
      "basic_auth_users:",
      `  prometheus: '${bcrypt.hashSync(PASSWORD, 10)}'`,
      "",
    ].join("\n"),
  );
});

afterAll(() => {
  ca?.remove();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** GET https://127.0.0.1:port/path trusting the test CA, with basic auth if given. */
function httpsGet(
  port: number,
  path: string,
  auth?: string,
  client?: CertificateFiles,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        ca: readFileSync(ca.certFile, "utf8"),
        ...(auth === undefined ? {} : { auth }),
        ...(client === undefined
          ? {}
          : { cert: readFileSync(client.certFile, "utf8"), key: readFileSync(client.keyFile, "utf8") }),
        agent: false,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (d: string) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("metrics endpoint with TLS and basic auth", () => {
  it("a real Prometheus scrapes /metrics over https with basic auth; a wrong password gets 401", async () => {
    const topic = uniqueName("webcfg");
    const group = uniqueName("g");
    await produceLedger(stack.admin, topic, { count: 40, partitions: 1, seed: 7 });
    const run = startCliInTest(
      ["run", "--projection", "ledger", "--topic", topic, "--group", group, "--database-url", stack.db.url],
      { REPLAYABLE_METRICS_WEB_CONFIG_FILE: webConfig },
    );
    const port = await run.metricsPort();
    await waitForCaughtUp(stack.admin, group, topic);

    const target = [`127.0.0.1:${port}`];
    const prometheus = await startPrometheus([
      {
        name: "replayable",
        targets: target,
        scheme: "https",
        caFile: ca.certFile,
        basicAuth: { username: "prometheus", password: PASSWORD },
      },
      {
        name: "wrong-password",
        targets: target,
        scheme: "https",
        caFile: ca.certFile,
        basicAuth: { username: "prometheus", password: "nope" },
      },
      { name: "plain-http", targets: target },
    ]);
    try {
      const applied = await waitFor(
        "Prometheus to scrape the applied counter over https",
        async () => {
          const values = await prometheus.query(`sum(replayable_records_applied_total{job="replayable"})`);
          return values[0] === 40 ? values[0] : undefined;
        },
        60_000,
      );
      expect(applied).toBe(40);
      const up = async (job: string) => (await prometheus.query(`up{job="${job}"}`))[0];
      await waitFor("the failing jobs to be scraped once", async () =>
        (await up("wrong-password")) !== undefined && (await up("plain-http")) !== undefined
          ? true
          : undefined,
      );
      expect(await up("replayable")).toBe(1);
      expect(await up("wrong-password")).toBe(0);
      expect(await up("plain-http")).toBe(0);
    } finally {
      await prometheus.stop();
    }

    const none = await httpsGet(port, "/metrics");
    expect(none.status).toBe(401);
    expect(none.headers["www-authenticate"]).toMatch(/^Basic realm="replayable"/);
    expect((await httpsGet(port, "/metrics", "prometheus:nope")).status).toBe(401);
    expect((await httpsGet(port, "/metrics", "someone:scrape-s3cret")).status).toBe(401);
    const ok = await httpsGet(port, "/metrics", `prometheus:${PASSWORD}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toContain("replayable_records_applied_total");
    // Probes need no credentials; /readyz's reason (which may name hosts) does.
    expect(await httpsGet(port, "/healthz")).toMatchObject({ status: 200, body: "ok\n" });
    expect((await httpsGet(port, "/readyz")).body).toMatch(/^(ready|not ready)\n$/);
    // Plain HTTP to the TLS port: no answer.
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
    expect(run.stderr()).not.toContain(PASSWORD);
  });

  it("an invalid web configuration file stops run at start-up, naming the key", async () => {
    const bad = join(dir, "bad.yml");
    writeFileSync(bad, "tls_server_config:\n  certfile: x\n");
    const run = startCliInTest(
      ["run", "--projection", "ledger", "--group", uniqueName("g"), "--database-url", stack.db.url],
      {
        REPLAYABLE_METRICS_WEB_CONFIG_FILE: bad,
      },
    );
    expect((await run.exited).code).toBe(2);
    expect(run.stderr()).toContain(
      `REPLAYABLE_METRICS_WEB_CONFIG_FILE=${bad}: tls_server_config.certfile: unknown key`,
    );
  });

  it("client_auth_type RequireAndVerifyClientCert admits only clients with a certificate of client_ca_file", async () => {
    const clientCa = makeTestCa("prometheus client CA");
    try {
      const server = ca.issue("localhost", ["IP:127.0.0.1"]);
      const file = join(dir, "mtls.yml");
      writeFileSync(
        file,
        [
          "tls_server_config:",
          `  cert_file: ${server.certFile}`,
          `  key_file: ${server.keyFile}`,
          `  client_ca_file: ${clientCa.certFile}`,
          "  client_auth_type: RequireAndVerifyClientCert",
          "",
        ].join("\n"),
      );
      const http = await startHttpServer({
        host: "127.0.0.1",
        port: 0,
        registry: new Registry(),
        readiness: () => Promise.resolve({ ready: true }),
        webConfigFile: file,
      });
      try {
        expect(http.scheme).toBe("https");
        const admitted = await httpsGet(
          http.port,
          "/metrics",
          undefined,
          clientCa.issue("prometheus", [], { client: true }),
        );
        expect(admitted.status).toBe(200);
        await expect(httpsGet(http.port, "/metrics")).rejects.toThrow();
        const otherCaClient = ca.issue("intruder", [], { client: true });
        await expect(httpsGet(http.port, "/metrics", undefined, otherCaClient)).rejects.toThrow();
      } finally {
        await http.close();
      }
    } finally {
      clientCa.remove();
    }
  });
});
