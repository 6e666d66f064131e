import type pg from "pg";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { applyRecords } from "../../../src/engine/applyRecords.js";
import type { Projection } from "../../../src/projection.js";
import { clearSecrets, registerSecret } from "../../../src/secrets/secrets.js";

/**
 * Issue 26 item 6: a dead letter's error message is stored, shown by `dead-letters list/show` and
 * sent in the DLQ header replayable.error.message, so it is scrubbed before it is stored.
 */
describe("a dead letter's error message", () => {
  afterEach(() => clearSecrets());

  it("reaches the dead-letter sink with secrets hidden (a decode error quoting the password)", async () => {
    registerSecret("hunter2-pw");
    const projection = {
      name: "scrub",
      dedupe: { kind: "offset" },
      defaultTopics: ["t"],
      tables: [],
      decode: () => {
        throw new Error("cannot decode: connect postgres://app:hunter2-pw@db/x failed; hunter2-pw");
      },
      apply: () => Promise.resolve(),
    } as unknown as Projection<unknown>;
    const messages: string[] = [];
    await applyRecords({
      client: {} as pg.PoolClient, // a decode failure touches no database
      projection,
      topic: "t",
      partition: 0,
      records: [
        {
          topic: "t",
          partition: 0,
          offset: "0",
          timestamp: "0",
          key: null,
          value: Buffer.from("x"),
          headers: {},
        },
      ],
      maxRecordBytes: 1_000_000,
      log: pino({ level: "silent" }),
      deadLetter: (_record, _code, message) => {
        messages.push(message);
        return Promise.resolve();
      },
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]).not.toContain("hunter2-pw");
    expect(messages[0]).toContain("cannot decode: connect postgres://app:***@db/x failed; ***");
  });
});
