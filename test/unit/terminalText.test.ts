import { describe, expect, it } from "vitest";
import { terminalSafe } from "../../src/text/terminalText.js";

describe("terminalSafe (issue 26 item 10)", () => {
  it("escapes C0 controls, DEL, C1 controls and bidi overrides, and keeps other text as it is", () => {
    expect(terminalSafe("a\u001b[31mred\u0007")).toBe("a\\x1b[31mred\\x07");
    expect(terminalSafe("x\ny\tz\r")).toBe("x\\ny\\tz\\r");
    expect(terminalSafe("del\u007f c1\u009b2J \u0085")).toBe("del\\x7f c1\\x9b2J \\x85");
    expect(terminalSafe("abc\u202edcba\u2066\u2069\u200f")).toBe("abc\\u202edcba\\u2066\\u2069\\u200f");
    expect(terminalSafe("Zürich – 東京 🚀 \\x1b")).toBe("Zürich – 東京 🚀 \\x1b");
  });

  it("leaves no control character of any code point below U+00A0", () => {
    let all = "";
    for (let c = 0; c < 0xa0; c++) all += String.fromCharCode(c);
    // eslint-disable-next-line no-control-regex
    expect(terminalSafe(all)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
