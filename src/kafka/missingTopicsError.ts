/**
 * A topic named to a command that does not exist on the cluster: a usage error naming the topic,
 * where its name came from and the fix. The one wording of it: `run` ({@link assertTopicsExist} in
 * admin.ts) and the operator commands (src/replay/missingTopics.ts) both throw this, and exit 2.
 */
import { ReplayableError } from "../errors.js";

/**
 * The error for `missing` topics (at least one).
 * @param source where the names came from, e.g. `--topic or REPLAYABLE_TOPICS`.
 * @param fix what to do, after "does not exist on the cluster; "; default: create it first or
 *   correct the name.
 * @returns a ReplayableError CONFIG_INVALID (the CLI exits 2) with `context.missing`.
 * @example throw missingTopicsError(["orders"], "REPLAYABLE_TOPICS or --topic")
 */
export function missingTopicsError(
  missing: readonly string[],
  source: string,
  fix?: string,
): ReplayableError {
  const many = missing.length > 1;
  return new ReplayableError(
    "CONFIG_INVALID",
    `topic${many ? "s" : ""} ${missing.join(", ")} (${source}) ${many ? "do" : "does"} not exist on the cluster; ${fix ?? `create ${many ? "them" : "it"} first or correct the name`}`,
    { context: { missing: [...missing] } },
  );
}
