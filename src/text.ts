/**
 * Strings PostgreSQL `text` stores exactly. JSON escapes can make JavaScript strings that do not
 * survive the trip: U+0000 (PostgreSQL text cannot hold it, "Character Types" in the PostgreSQL
 * docs) and lone UTF-16 surrogates such as "\ud800" (not Unicode scalar values; encoded as UTF-8
 * they become U+FFFD, so two different ids or accounts would collide).
 */

/** Why `value` cannot be stored exactly in PostgreSQL text, or undefined when it can. */
export function unstorableTextReason(value: string): string | undefined {
  if (value.includes("\u0000")) return "holds a NUL character, which PostgreSQL text cannot store";
  if (!value.isWellFormed()) {
    return "holds a lone UTF-16 surrogate (e.g. \\ud800), which is not a Unicode character and would be stored as U+FFFD";
  }
  return undefined;
}
