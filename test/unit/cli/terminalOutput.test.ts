import { afterEach, describe, expect, it, vi } from "vitest";
import { printError, printJson, printTable } from "../../../src/cli/common.js";

/** Issue 26 item 10: tables, errors and JSON print no terminal control character. */
describe("CLI output of record data", () => {
  afterEach(() => vi.restoreAllMocks());

  function captured(stream: NodeJS.WriteStream, print: () => void): string {
    let text = "";
    vi.spyOn(stream, "write").mockImplementation((chunk: string | Uint8Array) => {
      text += String(chunk);
      return true;
    });
    print();
    vi.restoreAllMocks();
    return text;
  }
  const hostile = "t\u001b]8;;http://x\u0007link\u001b[2J\u009b1m\u202eevil";
  // eslint-disable-next-line no-control-regex
  const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

  it("printTable escapes control characters in every cell and column name", () => {
    const out = captured(process.stdout, () => printTable([{ [`c${hostile}`]: hostile, n: 1 }]));
    expect(out).not.toMatch(CONTROL);
    expect(out).toContain("\\x1b[2J");
  });

  it("printError escapes them in every line of the message", () => {
    const out = captured(process.stderr, () => printError(`bad record:\n  ${hostile}`));
    expect(out).not.toMatch(CONTROL);
    expect(out).toContain("bad record:\n  t\\x1b]8;;");
  });

  it("printJson prints the same JSON value with C1 and bidi controls as \\u escapes", () => {
    const out = captured(process.stdout, () => printJson({ value: hostile }));
    expect(out).not.toMatch(CONTROL);
    expect(JSON.parse(out)).toEqual({ value: hostile });
  });
});
