/**
 * The records file of `replayable produce --topic T --file F`: JSON Lines, one record per line,
 * `{"key": ..., "value": ..., "headers": {...}}`, so a newcomer can put test records on their own
 * topic without another tool.
 */
import { parseTree, type Node as JsonNode } from "jsonc-parser";
import { ReplayableError } from "../errors.js";
import type { ProducerRecord } from "../kafka/producer.js";

/** The fields a line may hold. */
const FIELDS = new Set(["key", "value", "headers"]);

/**
 * Parses `content` (the file's text), one record per non-blank line:
 * - `key`: a string, or null/absent (no key: Kafka spreads such records over the partitions);
 * - `value`: a string (sent as it is, UTF-8), any other JSON value (sent as the line's own text of
 *   it, byte for byte: a number beyond 2^53, `1.50` or `1e2` is not rewritten by a parse and
 *   JSON.stringify), or null/absent (a tombstone);
 * - `headers`: an object of string values (absent: none).
 * Blank lines are skipped; a field or header name given twice in a line is refused (JSON.parse
 * would keep the last).
 * @param source the file's name, for the messages.
 * @throws ReplayableError CONFIG_INVALID naming the file and every line that is not such an
 *   object (the first 20), each with what is wrong, and what is valid.
 * @example parseRecordLines('{"key":"o-1","value":{"id":"o-1"},"headers":{"ce_id":"1"}}\n', "f")
 *   // [{ key: "o-1", value: '{"id":"o-1"}', headers: { ce_id: "1" } }]
 */
export function parseRecordLines(content: string, source: string): ProducerRecord[] {
  const records: ProducerRecord[] = [];
  const problems: string[] = [];
  for (const [index, raw] of content.split("\n").entries()) {
    const text = raw.trim();
    if (text === "") continue;
    const parsed = parseLine(text);
    if (typeof parsed === "string") problems.push(`${source} line ${index + 1}: ${parsed}`);
    else records.push(parsed);
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_PROBLEMS_SHOWN);
    const more = problems.length - shown.length;
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${shown.join("\n")}${more > 0 ? `\n(and ${more} more)` : ""}\neach line is one record, {"key": "k", "value": "text" or any JSON, "headers": {"name": "text"}} (key and headers optional); nothing was sent`,
      { context: { lines: problems.length } },
    );
  }
  if (records.length === 0)
    throw new ReplayableError("CONFIG_INVALID", `${source}: holds no records (one JSON object per line)`);
  return records;
}

/** How many bad lines one error lists. */
const MAX_PROBLEMS_SHOWN = 20;

/** An object node's properties, as name and value node, in the order written. */
function properties(node: JsonNode | undefined): [string, JsonNode][] {
  if (node?.type !== "object") return [];
  return (node.children ?? []).flatMap((property) => {
    const [name, value] = property.children ?? [];
    return name === undefined || value === undefined
      ? []
      : [[name.value as string, value] as [string, JsonNode]];
  });
}

/** One non-blank line as a record, or what is wrong with it. */
function parseLine(text: string): ProducerRecord | string {
  let line: unknown;
  try {
    line = JSON.parse(text);
  } catch (error) {
    return `not JSON (${error instanceof Error ? error.message : String(error)})`;
  }
  if (typeof line !== "object" || line === null || Array.isArray(line)) return "not a JSON object";
  const fields = line as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((f) => !FIELDS.has(f));
  if (unknown.length > 0) return `unknown field ${unknown.map((f) => `"${f}"`).join(", ")}`;
  // The line's own text of each field (JSON.parse accepted the line, so the tree is whole).
  let tree: JsonNode | undefined;
  try {
    tree = parseTree(text);
  } catch (error) {
    // jsonc-parser descends recursively, JSON.parse does not: thousands of nested arrays.
    if (error instanceof RangeError) return "nested too deeply to send as written";
    throw error;
  }
  const texts = new Map<string, string>();
  for (const [field, node] of properties(tree)) {
    if (texts.has(field)) return `field "${field}" given twice`;
    texts.set(field, text.slice(node.offset, node.offset + node.length));
    if (field !== "headers") continue;
    const names = new Set<string>();
    for (const [name] of properties(node)) {
      if (names.has(name)) return `header "${name}" given twice`;
      names.add(name);
    }
  }
  const { key, value, headers } = fields;
  if (key !== undefined && key !== null && typeof key !== "string") return '"key" must be a string or null';
  if (headers !== undefined && (typeof headers !== "object" || headers === null || Array.isArray(headers)))
    return '"headers" must be an object of string values';
  const headerEntries = Object.entries((headers ?? {}) as Record<string, unknown>);
  for (const [name, v] of headerEntries)
    if (typeof v !== "string") return `header "${name}" must be a string`;
  return {
    key: key ?? null,
    value:
      value === undefined || value === null ? null : typeof value === "string" ? value : texts.get("value")!,
    ...(headerEntries.length === 0
      ? {}
      : { headers: Object.fromEntries(headerEntries) as Record<string, string> }),
  };
}
