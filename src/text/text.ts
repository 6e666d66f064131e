/**
 * Strings PostgreSQL `text` stores exactly. JSON escapes can make JavaScript strings that do not
 * survive the trip: U+0000 (PostgreSQL text cannot hold it, "Character Types" in the PostgreSQL
 * docs) and lone UTF-16 surrogates such as "\ud800" (not Unicode scalar values; encoded as UTF-8
 * they become U+FFFD, so two different ids or accounts would collide).
 */

const LONE_SURROGATE =
  "holds a lone UTF-16 surrogate (e.g. \\ud800), which is not a Unicode character and would be stored as U+FFFD";

/** Why `value` cannot be stored exactly in PostgreSQL text, or undefined when it can. */
export function unstorableTextReason(value: string): string | undefined {
  if (value.includes("\u0000")) return "holds a NUL character, which PostgreSQL text cannot store";
  if (!value.isWellFormed()) return LONE_SURROGATE;
  return undefined;
}

/**
 * Why a projection field cannot be stored exactly, or undefined: only the silent case, lone
 * surrogates. (A NUL is refused by PostgreSQL itself with SQLSTATE 22021, so the engine
 * dead-letters that record as APPLY_REJECTED with the database's own message.)
 */
export function silentlyAlteredTextReason(value: string): string | undefined {
  return value.isWellFormed() ? undefined : LONE_SURROGATE;
}
