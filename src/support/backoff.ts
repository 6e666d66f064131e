/** Exponential back-off with "equal jitter" ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015): half the delay fixed, half random. */

/**
 * The delay before retry number `attempt` (0-based), in ms: a random value in
 * [base/2, base] where base = min(maxMs, initialMs * 2^attempt).
 */
export function backoffDelayMs(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random = Math.random,
): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base / 2 + (random() * base) / 2);
}
