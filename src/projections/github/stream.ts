/**
 * The records `produce github` sends for a GH Archive file: every line once, in file order,
 * plus seeded re-sends (the same bytes, so the same `id`, at a later offset) as a producer
 * retrying after a timeout would make them, and what the derived tables must then hold.
 */
import { seededRandom } from "../../support/random.js";
import {
  githubChecksum,
  githubStateOf,
  githubTotals,
  type GithubState,
  type GithubTotals,
} from "./checksum.js";
import type { GithubFileLine } from "./eventFile.js";

/** A record to produce: key = the event's `repo`, value = the line's exact bytes. */
export interface GithubOutgoingRecord {
  readonly key: string;
  readonly value: Buffer;
}

/** Options for {@link githubStream}. */
export interface GithubStreamOptions {
  /** Fraction in [0, 1) of the events that are sent a second time: round(rate × events) of them. */
  readonly duplicateRate: number;
  readonly seed: number;
  /** A re-send follows its original after at most this many other lines; default 5. */
  readonly maxRetryDelayLines?: number;
}

/** The records and what applying each distinct event once must give. */
export interface GithubStream {
  readonly records: GithubOutgoingRecord[];
  /** Distinct events: the lines of the file. */
  readonly events: number;
  /** Re-sent records (records minus events). */
  readonly duplicates: number;
  readonly expected: GithubState;
  readonly totals: GithubTotals;
  /** {@link githubChecksum} of `expected`. */
  readonly checksum: string;
}

/**
 * Builds the records for `lines`: each line once in file order; with a duplicate rate R, exactly
 * round(R × lines) distinct lines (chosen by the seed) are sent once more, 0 to
 * `maxRetryDelayLines` lines after the original. Key = `repo`, so a re-send lands on the same
 * partition as its original, at a later offset. The same options give the same records.
 */
export function githubStream(lines: readonly GithubFileLine[], options: GithubStreamOptions): GithubStream {
  const random = seededRandom(options.seed);
  const maxDelay = options.maxRetryDelayLines ?? 5;
  const count = Math.round(options.duplicateRate * lines.length);
  // A partial Fisher-Yates shuffle picks `count` distinct lines to re-send.
  const order = lines.map((_, i) => i);
  const resendAfter = new Map<number, number[]>();
  for (let k = 0; k < count; k++) {
    const j = k + Math.floor(random() * (order.length - k));
    [order[k], order[j]] = [order[j]!, order[k]!];
    const original = order[k]!;
    const after = Math.min(original + Math.floor(random() * (maxDelay + 1)), lines.length - 1);
    resendAfter.set(after, [...(resendAfter.get(after) ?? []), original]);
  }
  const records: GithubOutgoingRecord[] = [];
  lines.forEach((line, i) => {
    records.push({ key: line.event.repo, value: line.bytes });
    for (const original of resendAfter.get(i) ?? []) {
      const again = lines[original]!;
      records.push({ key: again.event.repo, value: again.bytes });
    }
  });
  const expected = githubStateOf(lines.map((l) => l.event));
  return {
    records,
    events: lines.length,
    duplicates: count,
    expected,
    totals: githubTotals(expected),
    checksum: githubChecksum(expected),
  };
}
