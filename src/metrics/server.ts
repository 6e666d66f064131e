/**
 * The HTTP endpoints (docs/metrics.md): `/metrics` (Prometheus text format 0.0.4), `/healthz`
 * (200 while the process runs), `/readyz` (200 when ready, 503 with the reason otherwise).
 * Uses node:http, or node:https when the web configuration file (REPLAYABLE_METRICS_WEB_CONFIG_FILE,
 * the Prometheus exporters' format; webConfig.ts) has `tls_server_config`. With
 * `basic_auth_users`, /metrics and /readyz's reason need the credentials (401 with
 * WWW-Authenticate otherwise); /healthz and /readyz's status stay open for probes and never run
 * bcrypt, even when the request carries an Authorization header (docs/security.md "Metrics
 * endpoint"). The server runs on the consumer's thread, so it bounds what a client can cost:
 * {@link METRICS_SERVER_LIMITS}. Answers pass through scrubSecrets: a reason quoting a
 * library's error never shows a password.
 */
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Registry } from "prom-client";
import { scrubSecrets } from "../secrets/secrets.js";
import { ReplayableError } from "../errors.js";
import { BasicAuth, type BcryptCompare } from "./basicAuth.js";
import { loadWebConfig, type WebConfig, type WebTls } from "./webConfig.js";

/**
 * Bounds on the metrics server's clients (issue 26 item 9): a scraper and a few probes need a
 * handful of connections and send a request in milliseconds. Node's defaults (no connection
 * limit, 60 s for the headers, 300 s for the request) let one slow or flooding client hold
 * sockets and memory on the consumer's process.
 */
export const METRICS_SERVER_LIMITS = Object.freeze({
  /** Connections at once; a new one over it is closed at once (`server.maxConnections`). */
  maxConnections: 32,
  /** Time to receive a request's headers, ms (`server.headersTimeout`). */
  headersTimeoutMs: 5_000,
  /** Time to receive a whole request, ms (`server.requestTimeout`). */
  requestTimeoutMs: 10_000,
  /** Idle time of a kept-alive connection between requests, ms (`server.keepAliveTimeout`); Prometheus scrapes every 15 s or more, and reconnects. */
  keepAliveTimeoutMs: 5_000,
  /** How often Node checks the header and request timeouts, ms (`connectionsCheckingInterval`). */
  checkIntervalMs: 1_000,
  /** Headers per request (`server.maxHeadersCount`). */
  maxHeadersCount: 50,
});

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
  /** The web configuration file (REPLAYABLE_METRICS_WEB_CONFIG_FILE); undefined: plain HTTP, no authentication. */
  webConfigFile?: string | undefined;
  /** bcrypt's compare, for tests that count its calls; default bcryptjs's. */
  compare?: BcryptCompare;
}

/** A started server; `close()` is idempotent. */
export interface HttpServer {
  readonly port: number;
  /** `https` when the web configuration has `tls_server_config`. */
  readonly scheme: "http" | "https";
  /** True when the web configuration has `basic_auth_users`. */
  readonly basicAuth: boolean;
  close(): Promise<void>;
}

/**
 * Starts the metrics and health server; HTTPS and basic authentication as the web configuration
 * file says.
 * @throws ReplayableError CONFIG_INVALID naming REPLAYABLE_METRICS_WEB_CONFIG_FILE when the file is invalid.
 * @throws ReplayableError CONFIG_INVALID naming REPLAYABLE_METRICS_PORT when the port is taken
 *   (EADDRINUSE); any other listen error as it is.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const web = loadWebConfig(options.webConfigFile);
  const handler = requestHandler(options, web);
  const server: Server =
    web?.tls === undefined ? createServer(LIMITS_OPTIONS, handler) : httpsServer(web.tls, handler);
  server.maxConnections = METRICS_SERVER_LIMITS.maxConnections;
  server.headersTimeout = METRICS_SERVER_LIMITS.headersTimeoutMs;
  server.requestTimeout = METRICS_SERVER_LIMITS.requestTimeoutMs;
  server.keepAliveTimeout = METRICS_SERVER_LIMITS.keepAliveTimeoutMs;
  server.maxHeadersCount = METRICS_SERVER_LIMITS.maxHeadersCount;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new ReplayableError(
              "CONFIG_INVALID",
              `REPLAYABLE_METRICS_PORT=${options.port}: ${options.host}:${options.port} is in use (another member on this host?): give each member its own port with REPLAYABLE_METRICS_PORT or --metrics-port, or 0 for any free port`,
              { cause: error },
            )
          : error,
      ),
    );
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  let closed: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    scheme: web?.tls === undefined ? "http" : "https",
    basicAuth: (web?.users.size ?? 0) > 0,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      return closed;
    },
  };
}

/** {@link METRICS_SERVER_LIMITS} as options of createServer (the check interval can only be set there). */
const LIMITS_OPTIONS = {
  headersTimeout: METRICS_SERVER_LIMITS.headersTimeoutMs,
  requestTimeout: METRICS_SERVER_LIMITS.requestTimeoutMs,
  keepAliveTimeout: METRICS_SERVER_LIMITS.keepAliveTimeoutMs,
  connectionsCheckingInterval: METRICS_SERVER_LIMITS.checkIntervalMs,
};

/** An HTTPS server; client certificates as exporter-toolkit's client_auth_type (Go's tls.ClientAuthType). */
function httpsServer(tls: WebTls, handler: RequestListener): Server {
  const verify = tls.clientAuth === "RequireAndVerifyClientCert";
  const server = createHttpsServer(
    {
      ...LIMITS_OPTIONS,
      cert: tls.cert,
      key: tls.key,
      ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa }),
      requestCert: tls.clientAuth !== "NoClientCert",
      rejectUnauthorized: verify,
      minVersion: tls.minVersion,
      maxVersion: tls.maxVersion,
      honorCipherOrder: tls.honorCipherOrder,
    },
    handler,
  );
  server.on("secureConnection", (socket: TLSSocket) => {
    const given = Object.keys(socket.getPeerCertificate()).length > 0;
    if (tls.clientAuth === "RequireAnyClientCert" && !given) socket.destroy();
    if (tls.clientAuth === "VerifyClientCertIfGiven" && given && !socket.authorized) socket.destroy();
  });
  return server;
}

/** The request handler: routes, basic authentication, the configured headers. */
function requestHandler(options: HttpServerOptions, web: WebConfig | undefined): RequestListener {
  const auth = new BasicAuth(web?.users ?? new Map(), options.compare);
  const headers = web?.headers ?? {};
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    void (async () => {
      try {
        // Routes first: only /metrics and /readyz's reason need the credentials, so only they run bcrypt.
        if (req.method !== "GET" && req.method !== "HEAD") {
          res.writeHead(405, { allow: "GET, HEAD" }).end();
          return;
        }
        if (path === "/healthz") {
          res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
          return;
        }
        const given = req.headers.authorization;
        const outcome = path === "/metrics" ? await auth.verify(given) : undefined;
        if (outcome === "busy") {
          res
            .writeHead(429, { "content-type": "text/plain", "retry-after": "1" })
            .end("too many new credentials to check at once; try again\n");
        } else if (outcome === "refused") {
          res
            .writeHead(401, {
              "content-type": "text/plain",
              "www-authenticate": 'Basic realm="replayable", charset="UTF-8"',
            })
            .end("unauthorized\n");
        } else if (path === "/metrics") {
          const body = await options.registry.metrics();
          res.writeHead(200, { "content-type": options.registry.contentType }).end(body);
        } else if (path === "/readyz") {
          const r = await options.readiness();
          // The reason only for credentials that check out; a ready answer has none to show.
          const shown = !r.ready && (auth.open || (given !== undefined && (await auth.check(given))));
          const reason = shown ? `: ${scrubSecrets(r.reason)}` : "";
          res
            .writeHead(r.ready ? 200 : 503, { "content-type": "text/plain" })
            .end(r.ready ? "ready\n" : `not ready${reason}\n`);
        } else {
          res
            .writeHead(404, { "content-type": "text/plain" })
            .end("not found: try /metrics, /healthz, /readyz\n");
        }
      } catch (error) {
        res.writeHead(500, { "content-type": "text/plain" }).end(`error: ${scrubSecrets(String(error))}\n`);
      }
    })();
  };
}
