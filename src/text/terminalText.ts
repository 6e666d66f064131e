/**
 * Text for a terminal: record data (keys, values, header names, error messages quoting them)
 * must not reach the operator's terminal as control sequences. An ESC (U+001B) or a C1 CSI
 * (U+009B) starts a sequence that can move the cursor, clear the screen, set the window title or
 * write a hyperlink; bidi overrides (U+202A..U+202E, U+2066..U+2069) reorder what is shown
 * (CVE-2021-42574, "Trojan Source"). JSON.stringify escapes C0 controls but not DEL, C1 or bidi
 * controls, so JSON output keeps its exact strings and every human-readable output goes through
 * {@link terminalSafe} (issue 26 item 10, docs/security.md "Terminal output").
 */

/** C0 controls, DEL, C1 controls, the bidi embeddings, overrides and isolates, and the LRM/RLM/ALM marks. */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Short escapes, as in JavaScript string literals. */
const SHORT: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * `text` with every terminal control character written as a visible escape: `\n`, `\r`, `\t`,
 * `\xHH` below U+0100 (C0, DEL, C1), `\uHHHH` for the bidi controls. Other text, and backslashes,
 * are kept as they are, so the result is for reading, not for parsing back.
 * @example terminalSafe("a\u001b[2Jb") === "a\\x1b[2Jb"
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const short = SHORT[c];
    if (short !== undefined) return short;
    const code = c.charCodeAt(0);
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, "0")}`
      : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}
