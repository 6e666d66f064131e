/**
 * The `--topic T[:p,q,...]` argument of `replay`, as `kafka-consumer-groups --reset-offsets`
 * reads it: a topic alone means all its partitions, `T:0,2` only partitions 0 and 2.
 */
import { ReplayableError } from "../errors.js";

/** One `--topic` value: a topic and, when listed, some of its partitions (ascending, distinct). */
export interface TopicArg {
  readonly topic: string;
  /** Undefined means every partition of the topic. */
  readonly partitions?: readonly number[];
}

/** Kafka's legal topic characters and length (`Topic.validate`). */
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;
const INT32_MAX = 2 ** 31 - 1;

/**
 * Parses `--topic` values; repeated topics are merged (a topic named alone wins over a partition list).
 * @throws ReplayableError CONFIG_INVALID naming the value when a topic name or partition is invalid.
 * @example parseTopicArgs(["orders:0,2", "payments"]) // [{topic:"orders",partitions:[0,2]},{topic:"payments"}]
 */
export function parseTopicArgs(values: readonly string[]): TopicArg[] {
  const merged = new Map<string, Set<number> | "all">();
  for (const value of values) {
    const colon = value.indexOf(":");
    const topic = colon < 0 ? value : value.slice(0, colon);
    if (!TOPIC.test(topic)) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--topic: "${value}" does not start with a topic name (1-249 of a-z A-Z 0-9 . _ -); give T or T:0,1,2`,
      );
    }
    if (colon < 0) {
      merged.set(topic, "all");
      continue;
    }
    const partitions = value
      .slice(colon + 1)
      .split(",")
      .map((p) => {
        const n = /^\d+$/.test(p) ? Number(p) : NaN;
        if (!(n <= INT32_MAX)) {
          throw new ReplayableError(
            "CONFIG_INVALID",
            `--topic: "${value}" has partition "${p}"; partitions are whole numbers, e.g. ${topic}:0,1`,
          );
        }
        return n;
      });
    const current = merged.get(topic);
    if (current === "all") continue;
    const set = current ?? new Set<number>();
    for (const p of partitions) set.add(p);
    merged.set(topic, set);
  }
  return [...merged].map(([topic, parts]) =>
    parts === "all" ? { topic } : { topic, partitions: [...parts].sort((a, b) => a - b) },
  );
}
