/**
 * The soak's seeded randomness: every choice the soak makes (the ledger stream, which fault, which
 * member or broker, how long) comes from a PRNG seeded by SOAK_SEED, so a failing run's schedule is
 * made again by its seed (TigerBeetle's VOPR, FoundationDB's simulation). The PRNG is the project's
 * own mulberry32 ({@link seededRandom}, src/support/random.ts), which `produce --seed` uses too.
 *
 * What a seed does not fix: the timing of the real processes (Kafka, PostgreSQL, the members), so
 * two runs of one seed make the same faults in the same order with the same holds, not the same
 * interleavings. The history file records what did happen.
 */
import { seededRandom } from "../../src/support/random.js";

/** A seeded source of the soak's random choices. */
export class SoakRandom {
  readonly #next: () => number;

  /** @param seed a 32-bit unsigned seed; the same seed gives the same sequence. */
  constructor(readonly seed: number) {
    this.#next = seededRandom(seed);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.#next();
  }

  /** A whole number in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.#next() * (max - min + 1));
  }

  /**
   * One element of `items`, uniformly.
   * @throws Error when `items` is empty.
   */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("SoakRandom.pick: nothing to pick from");
    return items[Math.floor(this.#next() * items.length)]!;
  }

  /** One key of `weights`, with probability proportional to its (non-negative) weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((n, [, w]) => n + w, 0);
    let roll = this.#next() * total;
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }

  /**
   * A new, independent stream derived from this seed and `label` (e.g. the nemesis's), so that one
   * part drawing more numbers does not shift another part's choices.
   */
  derive(label: string): SoakRandom {
    let h = this.seed ^ 0x9e3779b9;
    for (const c of label) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
    return new SoakRandom(h >>> 0);
  }
}
