import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { extractEventId } from "../../src/engine/dedupeKeys.js";
import { PermanentRecordError, ReplayableError } from "../../src/errors.js";
import { githubChecksum, githubStateOf, githubTotals } from "../../src/projections/github/checksum.js";
import { parseGithubEventLines } from "../../src/projections/github/eventFile.js";
import { decodeGithubEvent } from "../../src/projections/github/events.js";
import { githubProjection } from "../../src/projections/github/githubProjection.js";
import { githubStream } from "../../src/projections/github/stream.js";
import type { KafkaRecord } from "../../src/record.js";

const FILE = "data/github-events/2021-07-21-gharchive-800.jsonl";

const rec = (value: unknown): KafkaRecord => ({
  topic: "t",
  partition: 0,
  offset: "0",
  timestamp: "0",
  key: null,
  value:
    value === null
      ? null
      : Buffer.isBuffer(value)
        ? value
        : Buffer.from(typeof value === "string" ? value : JSON.stringify(value)),
  headers: {},
});

const push = { id: "1", type: "PushEvent", actor: "user-a", repo: "org-a/repo-a", payload: { size: 3 } };

/** The PermanentRecordError `fn` throws. */
function permanentError(fn: () => unknown): PermanentRecordError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(PermanentRecordError);
    return error as PermanentRecordError;
  }
  throw new Error("expected a PermanentRecordError, nothing was thrown");
}

describe("decodeGithubEvent", () => {
  it("decodes a PushEvent with its size and any other type without one", () => {
    expect(decodeGithubEvent(rec(push))).toEqual({
      type: "PushEvent",
      repo: "org-a/repo-a",
      actor: "user-a",
      pushSize: 3,
    });
    expect(decodeGithubEvent(rec({ ...push, type: "WatchEvent", payload: { action: "started" } }))).toEqual({
      type: "WatchEvent",
      repo: "org-a/repo-a",
      actor: "user-a",
      pushSize: undefined,
    });
    expect(decodeGithubEvent(rec({ ...push, payload: { size: 0 } })).pushSize).toBe(0);
  });

  it.each([
    ["type", { ...push, type: undefined }],
    ["type", { ...push, type: 7 }],
    ["type", { ...push, type: "" }],
    ["repo", { ...push, repo: { name: "org-a/repo-a" } }],
    ["repo", { ...push, repo: "r".repeat(257) }],
    ["actor", { ...push, actor: null }],
    ["payload", { ...push, payload: undefined }],
    ["payload", { ...push, payload: [3] }],
    ["payload.size", { ...push, payload: { size: -1 } }],
    ["payload.size", { ...push, payload: { size: 1.5 } }],
    ["payload.size", { ...push, payload: { size: "3" } }],
    ["payload.size", { ...push, payload: {} }],
    [
      "payload.size",
      '{"id":"1","type":"PushEvent","actor":"a","repo":"r","payload":{"size":9007199254740993}}',
    ],
  ])("rejects a bad %s with a PermanentRecordError naming the field", (field, value) => {
    const error = permanentError(() => decodeGithubEvent(rec(value)));
    expect(error.code).toBe("DECODE_FAILED");
    expect(error.message).toContain(`field ${field} `);
  });

  it("rejects a value that is not a JSON object, naming the value", () => {
    for (const value of [null, "", "not json", "[1,2]", "42", Buffer.from([0xff, 0xfe, 0x7b])]) {
      const error = permanentError(() => decodeGithubEvent(rec(value)));
      expect(error.code).toBe("DECODE_FAILED");
      expect(error.message).toMatch(/^value /);
    }
  });
});

describe("github event ids", () => {
  it("are taken from the JSON field id exactly: leading zeros and values above 2^53 kept", () => {
    const id = (raw: string) =>
      extractEventId(
        rec(`{"id":${raw},"type":"WatchEvent","actor":"a","repo":"r"}`),
        githubProjection.dedupe as { kind: "event-id"; field: string },
      );
    expect(githubProjection.dedupe).toEqual({ kind: "event-id", field: "id" });
    expect(id('"000123"')).toBe("000123");
    expect(id('"9007199254740993"')).toBe("9007199254740993");
    // Parsed as numbers these would collide with "123" and "9007199254740992"; as strings they do not.
    expect(id('"000123"')).not.toBe(id('"123"'));
    expect(id('"9007199254740993"')).not.toBe(id('"9007199254740992"'));
  });

  it("refuses an id sent as a JSON number, which would lose digits above 2^53", () => {
    const error = permanentError(() =>
      extractEventId(rec('{"id":9007199254740993,"type":"WatchEvent","actor":"a","repo":"r"}'), {
        kind: "event-id",
        field: "id",
      }),
    );
    expect(error.code).toBe("EVENT_ID_MISSING");
    expect(error.message).toContain('JSON field "id" is a JSON number');
  });
});

describe("parseGithubEventLines", () => {
  const line = (id: string, extra = "") =>
    `{"id":"${id}","type":"PushEvent","actor":"u","repo":"o/r","payload":{"size":2}${extra}}`;

  it("keeps each line's bytes exactly, without the line terminator (\\n or \\r\\n)", () => {
    const odd = ` { "id" : "000123", "type":"WatchEvent", "actor":"ü", "repo":"o/r" } `;
    const content = Buffer.from(`${line("1")}\r\n${odd}\n${line("9007199254740993")}`);
    const lines = parseGithubEventLines(content, "f.jsonl");
    expect(lines.map((l) => l.bytes.toString("utf8"))).toEqual([line("1"), odd, line("9007199254740993")]);
    expect(lines.map((l) => l.id)).toEqual(["1", "000123", "9007199254740993"]);
    expect(lines.map((l) => l.line)).toEqual([1, 2, 3]);
  });

  it("names the line and the field of a bad event, an empty line and a repeated id", () => {
    const bad = (content: string) => {
      try {
        parseGithubEventLines(Buffer.from(content), "f.jsonl");
      } catch (error) {
        expect(error).toBeInstanceOf(ReplayableError);
        expect((error as ReplayableError).code).toBe("CONFIG_INVALID");
        return (error as Error).message;
      }
      throw new Error("expected an error");
    };
    expect(bad(`${line("1")}\n${line("2").replace('"size":2', '"size":-2')}\n`)).toMatch(
      /^f\.jsonl line 2: field payload\.size /,
    );
    expect(bad(`${line("1")}\n\n${line("2")}\n`)).toMatch(/^f\.jsonl line 2 is empty/);
    expect(bad(`${line("1")}\n${line("1")}\n`)).toMatch(
      /^f\.jsonl line 2: id "1" was already used on line 1/,
    );
    expect(bad(`{"id":5,"type":"WatchEvent","actor":"a","repo":"r"}\n`)).toMatch(/line 1: JSON field "id"/);
  });
});

describe("githubStream", () => {
  const lines = parseGithubEventLines(readFileSync(FILE), FILE);

  it("sends every line once in file order and re-sends exactly round(rate × events), each after its original", () => {
    const stream = githubStream(lines, { duplicateRate: 0.1, seed: 7 });
    expect(stream.events).toBe(800);
    expect(stream.duplicates).toBe(80);
    expect(stream.records).toHaveLength(880);
    const firstAt = new Map<string, number>();
    const originals: string[] = [];
    stream.records.forEach((r, i) => {
      const text = r.value.toString("utf8");
      if (firstAt.has(text)) {
        expect(i).toBeGreaterThan(firstAt.get(text)!);
      } else {
        firstAt.set(text, i);
        originals.push(text);
      }
      expect(r.key).toBe((JSON.parse(text) as { repo: string }).repo);
    });
    expect(originals).toEqual(lines.map((l) => l.bytes.toString("utf8")));
    expect(stream.records.length - originals.length).toBe(80);
    // No event is re-sent twice.
    expect(new Set(stream.records.map((r) => r.value.toString("utf8"))).size).toBe(800);
  });

  it("gives the same records for the same seed, others for another, none re-sent at rate 0", () => {
    const text = (seed: number) =>
      githubStream(lines, { duplicateRate: 0.1, seed })
        .records.map((r) => r.value.toString("utf8"))
        .join("\n");
    expect(text(7)).toBe(text(7));
    expect(text(7)).not.toBe(text(8));
    expect(githubStream(lines, { duplicateRate: 0, seed: 7 }).records).toHaveLength(800);
  });

  it("predicts totals equal to counts made directly from the file", () => {
    const types = new Map<string, number>();
    let commits = 0;
    for (const text of readFileSync(FILE, "utf8").split("\n").filter(Boolean)) {
      const e = JSON.parse(text) as { type: string; payload: { size?: number } };
      types.set(e.type, (types.get(e.type) ?? 0) + 1);
      if (e.type === "PushEvent") commits += e.payload.size!;
    }
    const { totals } = githubStream(lines, { duplicateRate: 0.1, seed: 7 });
    expect(totals.events).toBe(800);
    expect(totals.eventTypes).toEqual(Object.fromEntries(types));
    expect(totals.pushes).toBe(types.get("PushEvent"));
    expect(totals.commits).toBe(commits);
  });
});

describe("githubChecksum", () => {
  it("does not depend on row order, and changes with any count", () => {
    const events = parseGithubEventLines(readFileSync(FILE), FILE).map((l) => l.event);
    const state = githubStateOf(events);
    const reversed = githubStateOf([...events].reverse());
    expect(githubChecksum(reversed)).toBe(githubChecksum(state));
    const once = githubStateOf(events.slice(1));
    expect(githubChecksum(once)).not.toBe(githubChecksum(state));
    expect(githubTotals(state).events).toBe(800);
  });
});
