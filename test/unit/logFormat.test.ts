/**
 * Log lines a person can read on a terminal (issue 28): JSON stays the format for pipes, files and
 * log shippers; LOG_FORMAT forces either, and a bad value is refused at start-up.
 */
import type { DestinationStream } from "pino";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ReplayableError } from "../../src/errors.js";
import { createLogger, prettyDestination, resolveLogFormat } from "../../src/logger.js";
import { registerSecret } from "../../src/secrets/secrets.js";

describe("the log format", () => {
  it("regression: is readable lines when stderr is a terminal and JSON otherwise, unless LOG_FORMAT says", () => {
    expect(resolveLogFormat(undefined, true)).toBe("pretty");
    expect(resolveLogFormat(undefined, false)).toBe("json");
    expect(resolveLogFormat("json", true)).toBe("json");
    expect(resolveLogFormat("pretty", false)).toBe("pretty");
    expect(loadConfig({ LOG_FORMAT: "Pretty" }).logFormat).toBe("pretty");
    expect(loadConfig({}).logFormat).toBeUndefined();
  });

  it("refuses a LOG_FORMAT that is neither, naming the variable and the allowed values", () => {
    let thrown: unknown;
    try {
      loadConfig({ LOG_FORMAT: "yaml" });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ReplayableError);
    expect((thrown as ReplayableError).code).toBe("CONFIG_INVALID");
    expect((thrown as ReplayableError).message).toContain('LOG_FORMAT=yaml: must be one of "json", "pretty"');
  });

  it("writes one readable line per record, its fields after the message, secrets still scrubbed", () => {
    registerSecret("pretty-secret-7");
    const lines: string[] = [];
    const out: DestinationStream = { write: (line: string) => void lines.push(line) };
    const log = createLogger("info", { groupId: "orders" }, prettyDestination(out, false));
    log.info({ topic: "orders", partition: 0, offset: "42" }, "applied with pretty-secret-7");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: applied with \*\*\* \{"groupId":"orders","topic":"orders","partition":0,"offset":"42"\}\n$/,
    );
  });
});
