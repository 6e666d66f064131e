/**
 * Loads @platformatic/kafka, only when KAFKA_CLIENT=platformatic chose it: the library needs a
 * newer Node.js than replayable does (its package.json: `"node": ">= 22.22.0 || >= 24.6.0"`; it
 * uses APIs such as `Promise.withResolvers`), so it is never imported on the KafkaJS path.
 */
import { ReplayableError } from "../../errors.js";

/** The module's exports, as its types declare them. */
export type PlatformaticKafka = typeof import("@platformatic/kafka");

/** The Node.js versions the pinned @platformatic/kafka (2.12.1) supports: 22.22+ on 22, 24.6+ on 24, later majors. */
export const PLATFORMATIC_NODE_REQUIREMENT =
  ">= 22.22.0 on Node.js 22, >= 24.6.0 on Node.js 24, or a later major";

/** True when Node.js `version` (e.g. `v24.6.0`) can run @platformatic/kafka 2.12.1. */
export function supportsPlatformatic(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  if (major === 22) return minor >= 22;
  if (major === 24) return minor >= 6;
  return major === 23 || major >= 25;
}

/**
 * Imports @platformatic/kafka.
 * @throws ReplayableError CONFIG_INVALID naming KAFKA_CLIENT and the Node.js version needed when
 *   this Node.js is older; KAFKA when the module cannot be loaded.
 */
export async function loadPlatformaticKafka(version: string = process.version): Promise<PlatformaticKafka> {
  if (!supportsPlatformatic(version)) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `invalid configuration:\n  KAFKA_CLIENT=platformatic: @platformatic/kafka needs Node.js ${PLATFORMATIC_NODE_REQUIREMENT}; this is Node.js ${version}. Upgrade Node.js or use KAFKA_CLIENT=kafkajs (the default)`,
      { context: { variables: ["KAFKA_CLIENT"], nodeVersion: version } },
    );
  }
  try {
    return await import("@platformatic/kafka");
  } catch (error) {
    throw new ReplayableError("KAFKA", "KAFKA_CLIENT=platformatic: @platformatic/kafka could not be loaded", {
      cause: error,
    });
  }
}

/** Text of the error patch 002 adds to the Consumer class (its fetch, when a partition's leader moved). */
const SPLIT_LEADERS_TEXT = "are led by different brokers now";

/**
 * Refuses an unpatched @platformatic/kafka on the consume path (patches/README.md):
 * - "@platformatic+kafka+2.12.1+001+failed-broker-last.patch" makes its metadata lookups try a
 *   broker whose request timed out after the others; without it a silent (half-open) first
 *   bootstrap broker holds every metadata refresh, and every fetch of the member waiting on it, for
 *   a request timeout (30 s). It adds `ConnectionPool.prototype.brokersByHealth`.
 * - "...+002+fetch-split-leaders.patch" fails a fetch whose partitions are led by different brokers
 *   after a metadata refresh, instead of retrying it on the old (perhaps silent) leader three times.
 *   Its error text (SPLIT_LEADERS_TEXT) is in the Consumer class's source; a string, unlike the
 *   patch's local names, survives a minifier.
 * @throws ReplayableError KAFKA naming the missing patches and patches/README.md.
 */
export function assertPlatformaticPatched(lib: PlatformaticKafka): void {
  const missing: string[] = [];
  if (!("brokersByHealth" in lib.ConnectionPool.prototype)) missing.push("failed-broker-last");
  const consumerSource =
    typeof lib.Consumer === "function" ? Function.prototype.toString.call(lib.Consumer) : "";
  // The patch's error text: a string survives a minifier, which renames the patch's local names.
  if (!consumerSource.includes(SPLIT_LEADERS_TEXT)) missing.push("fetch-split-leaders");
  if (missing.length === 0) return;
  throw new ReplayableError(
    "KAFKA",
    `KAFKA_CLIENT=platformatic: the @platformatic/kafka loaded lacks replayable's patches ${missing.join(", ")}: a silent broker would stall fetches for request timeouts. Install replayable with npm or pnpm (they install the patched copy it bundles), or, in a checkout, run \`npm ci\` (its postinstall applies patches/ with patch-package); see patches/README.md`,
    { context: { missing } },
  );
}
