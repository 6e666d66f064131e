/** "Did you mean ...?": the nearest candidate to a misspelt name. */

/**
 * The candidate nearest to `name` by edit distance, if it is close (a likely typo: at most
 * `maxDistance` edits, 3 unless given); else, unless `maxDistance` is given, the only candidate
 * that starts with `name` followed by `_` (a name cut short: `basic_auth` for `basic_auth_users`).
 */
export function closest(
  name: string,
  candidates: readonly string[],
  maxDistance?: number,
): string | undefined {
  let best: string | undefined;
  let bestDistance = (maxDistance ?? 3) + 1;
  for (const candidate of candidates) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  if (best !== undefined || name === "" || maxDistance !== undefined) return best;
  const longer = candidates.filter((c) => c.startsWith(`${name}_`));
  return longer.length === 1 ? longer[0] : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}
