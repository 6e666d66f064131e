/**
 * Issue 26 item 9: unauthenticated requests must not cost bcrypt CPU on the consumer's thread, and
 * the server bounds its connections and how long a client may take to send its headers.
 * Real HTTP; bcrypt calls are counted through an injected compare, never timed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import bcrypt from "bcryptjs";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { METRICS_SERVER_LIMITS, startHttpServer } from "../../../src/metrics/server.js";
import { waitFor } from "../../helpers/stack.js";

let dir: string;
let webConfig: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "replayable-limits-"));
  webConfig = join(dir, "web.yml");
  writeFileSync(webConfig, `basic_auth_users:\n  prometheus: '${bcrypt.hashSync("right", 5)}'\n`);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

async function start(compare?: (p: string, h: string) => Promise<boolean>) {
  const server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    registry: new Registry(),
    readiness: () => Promise.resolve({ ready: true }),
    webConfigFile: webConfig,
    ...(compare === undefined ? {} : { compare }),
  });
  onTestFinished(() => server.close());
  return server;
}

describe("the metrics server under unauthenticated load", () => {
  it("answers /healthz and /readyz's status without bcrypt, and a repeated wrong password with one bcrypt", async () => {
    let calls = 0;
    const server = await start((p, h) => {
      calls++;
      return bcrypt.compare(p, h);
    });
    const get = (path: string, auth?: string) =>
      fetch(
        `http://127.0.0.1:${server.port}${path}`,
        auth === undefined ? {} : { headers: { authorization: auth } },
      );
    for (let i = 0; i < 3; i++) {
      expect((await get("/healthz", basic("prometheus", `wrong${i}`))).status).toBe(200);
      expect((await get("/readyz", basic("x", `wrong${i}`))).status).toBe(200);
    }
    expect(calls).toBe(0);
    for (let i = 0; i < 3; i++)
      expect((await get("/metrics", basic("prometheus", "wrong"))).status).toBe(401);
    expect(calls).toBe(1);
    expect((await get("/metrics", basic("prometheus", "right"))).status).toBe(200);
  });

  it("answers 429 to first-seen credentials beyond 8 waiting, compares one at a time, and still serves a scraper verified before", async () => {
    const held: (() => void)[] = [];
    let calls = 0;
    let holding = true;
    const server = await start(async (p, h) => {
      calls++;
      if (holding) await new Promise<void>((resolve) => held.push(resolve));
      return bcrypt.compare(p, h);
    });
    const get = (auth: string) =>
      fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: { authorization: auth } });
    holding = false;
    expect((await get(basic("prometheus", "right"))).status).toBe(200);
    holding = true;
    const early: number[] = [];
    const flood = Array.from({ length: 10 }, async (_, i) => {
      const status = (await get(basic("prometheus", `wrong-${i}`))).status;
      early.push(status);
      return status;
    });
    // While one comparison runs and seven wait, the two beyond are answered at once, unchecked.
    await waitFor("the two requests beyond the waiting ones to be answered", () =>
      early.length >= 2 ? true : undefined,
    );
    expect(early).toEqual([429, 429]);
    expect(held).toHaveLength(1);
    expect((await get(basic("prometheus", "right"))).status).toBe(200);
    holding = false;
    while (held.length > 0) held.shift()!();
    const answered = await Promise.all(flood);
    expect(answered.filter((status) => status === 429)).toHaveLength(2);
    expect(answered.filter((status) => status === 401)).toHaveLength(8);
    expect(calls).toBe(9); // the right password once, then eight of the ten
  });

  it("closes connections over its limit", async () => {
    const server = await start();
    const sockets: Socket[] = [];
    onTestFinished(() => sockets.forEach((s) => s.destroy()));
    const closed = new Set<number>();
    for (let i = 0; i < METRICS_SERVER_LIMITS.maxConnections + 1; i++) {
      const s = connect(server.port, "127.0.0.1");
      s.on("close", () => closed.add(i));
      s.on("error", () => undefined);
      sockets.push(s);
      await new Promise((resolve) => s.once("connect", resolve));
    }
    await waitFor("the connection over the limit to be closed", () => (closed.size > 0 ? true : undefined));
    expect([...closed]).toEqual([METRICS_SERVER_LIMITS.maxConnections]);
  });

  it("closes a connection whose headers never finish (headersTimeout)", async () => {
    expect(METRICS_SERVER_LIMITS.headersTimeoutMs).toBeLessThanOrEqual(10_000);
    const server = await start();
    const s = connect(server.port, "127.0.0.1");
    onTestFinished(() => {
      s.destroy();
    });
    let closed = false;
    s.on("close", () => (closed = true));
    s.on("error", () => undefined);
    s.on("data", () => undefined);
    await new Promise((resolve) => s.once("connect", resolve));
    s.write("GET /metrics HTTP/1.1\r\nHost: x\r\n"); // no blank line: the headers never end
    await waitFor("the slow client to be cut off", () => (closed ? true : undefined), 30_000);
  }, 40_000);
});
