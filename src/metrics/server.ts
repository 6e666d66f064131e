/**
 * The HTTP endpoints (docs/metrics.md): `/metrics` (Prometheus text format 0.0.4), `/healthz`
 * (200 while the process runs), `/readyz` (200 when ready, 503 with the reason otherwise).
 * Uses node:http. Answers pass through scrubSecrets: a reason quoting a library's error never
 * shows a password.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { scrubSecrets } from "../secrets.js";

/** The answer of a readiness probe: ready, or not with the reason. */
export type Readiness = { ready: true } | { ready: false; reason: string };

/** Options for {@link startHttpServer}. */
export interface HttpServerOptions {
  /** Interface to listen on, e.g. 127.0.0.1 (REPLAYABLE_METRICS_HOST; 0.0.0.0 in a container). */
  host: string;
  /** TCP port; 0 picks a free one (see the returned `port`) (REPLAYABLE_METRICS_PORT). */
  port: number;
  registry: Registry;
  /** Called on each GET /readyz. */
  readiness: () => Promise<Readiness>;
}

/** A started server; `close()` is idempotent. */
export interface HttpServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Starts the metrics and health server.
 * @throws the listen error (e.g. EADDRINUSE) when the port is taken.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    void (async () => {
      try {
        if (req.method !== "GET" && req.method !== "HEAD") {
          res.writeHead(405, { allow: "GET, HEAD" }).end();
        } else if (path === "/metrics") {
          const body = await options.registry.metrics();
          res.writeHead(200, { "content-type": options.registry.contentType }).end(body);
        } else if (path === "/healthz") {
          res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
        } else if (path === "/readyz") {
          const r = await options.readiness();
          res
            .writeHead(r.ready ? 200 : 503, { "content-type": "text/plain" })
            .end(r.ready ? "ready\n" : `not ready: ${scrubSecrets(r.reason)}\n`);
        } else {
          res
            .writeHead(404, { "content-type": "text/plain" })
            .end("not found: try /metrics, /healthz, /readyz\n");
        }
      } catch (error) {
        res.writeHead(500, { "content-type": "text/plain" }).end(`error: ${scrubSecrets(String(error))}\n`);
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  let closed: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      return closed;
    },
  };
}
