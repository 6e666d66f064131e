/**
 * A second member on one host with the default metrics port (newcomer report, issue 28): the
 * port in use is a config error naming REPLAYABLE_METRICS_PORT and the fix, not Node's bare
 * `listen EADDRINUSE`. Real sockets.
 */
import { Registry } from "prom-client";
import { describe, expect, it, onTestFinished } from "vitest";
import { startHttpServer } from "../../../src/metrics/server.js";

const options = (port: number) => ({
  host: "127.0.0.1",
  port,
  registry: new Registry(),
  readiness: () => Promise.resolve({ ready: true as const }),
});

describe("the metrics port in use", () => {
  it("is refused naming REPLAYABLE_METRICS_PORT, --metrics-port and 0", async () => {
    const first = await startHttpServer(options(0));
    onTestFinished(() => first.close());
    await expect(startHttpServer(options(first.port))).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: `REPLAYABLE_METRICS_PORT=${first.port}: 127.0.0.1:${first.port} is in use (another member on this host?): give each member its own port with REPLAYABLE_METRICS_PORT or --metrics-port, or 0 for any free port`,
    });
  });
});
