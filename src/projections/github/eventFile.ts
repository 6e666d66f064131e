/**
 * Reading a GH Archive JSON Lines file (one event per line, e.g. data/github-events/*.jsonl)
 * into the exact bytes of each line, validated as the github projection will validate them.
 */
import { readFile } from "node:fs/promises";
import { errorMessage, ReplayableError } from "../../errors.js";
import { extractEventId } from "../../engine/dedupeKeys.js";
import { decodeGithubEventValue, type GithubEvent } from "./events.js";

/** One line of the file: its number (from 1), its bytes without the line terminator, id and event. */
export interface GithubFileLine {
  readonly line: number;
  readonly bytes: Buffer;
  readonly id: string;
  readonly event: GithubEvent;
}

/**
 * Splits `content` into lines (terminated by `\n` or `\r\n`, as JSON Lines allows; the last
 * line may lack it) and validates each: its `id` with the engine's own event-id rule (a non-empty
 * JSON string, so "000123" and "9007199254740993" stay exact) and its fields with the projection's
 * decode. The bytes of each line are kept exactly.
 * @param source the file name, for error messages.
 * @throws ReplayableError CONFIG_INVALID naming the line, the field and what is valid: an empty
 *   line, an invalid event, or an id that an earlier line already used.
 */
export function parseGithubEventLines(content: Buffer, source: string): GithubFileLine[] {
  const lines: GithubFileLine[] = [];
  const firstLineOfId = new Map<string, number>();
  let start = 0;
  let number = 0;
  while (start < content.length) {
    number += 1;
    const newline = content.indexOf(0x0a, start);
    const end = newline === -1 ? content.length : newline;
    const bytes = content.subarray(start, end > start && content[end - 1] === 0x0d ? end - 1 : end);
    start = end + 1;
    const where = `${source} line ${number}`;
    if (bytes.length === 0) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        `${where} is empty: a JSON Lines file holds one JSON object per line, with no blank lines`,
      );
    }
    let id: string;
    let event: GithubEvent;
    try {
      id = extractEventId(
        { topic: "", partition: 0, offset: "0", timestamp: "0", key: null, value: bytes, headers: {} },
        { kind: "event-id", field: "id" },
      );
      event = decodeGithubEventValue(bytes);
    } catch (error) {
      throw new ReplayableError("CONFIG_INVALID", `${where}: ${errorMessage(error)}`, { cause: error });
    }
    const earlier = firstLineOfId.get(id);
    if (earlier !== undefined) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        `${where}: id ${JSON.stringify(id)} was already used on line ${earlier}; each line must be a distinct event (use --duplicate-rate to re-send events)`,
      );
    }
    firstLineOfId.set(id, number);
    lines.push({ line: number, bytes, id, event });
  }
  return lines;
}

/**
 * Reads and validates a GH Archive JSON Lines file (see {@link parseGithubEventLines}).
 * @throws ReplayableError CONFIG_INVALID when the file cannot be read, naming `flag`, or is invalid.
 */
export async function readGithubEventFile(path: string, flag = "--file"): Promise<GithubFileLine[]> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (error) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${flag}: cannot read ${path}: ${errorMessage(error)}; give the path of a JSON Lines file such as data/github-events/2021-07-21-gharchive-800.jsonl`,
      { cause: error },
    );
  }
  const lines = parseGithubEventLines(content, path);
  if (lines.length === 0) {
    throw new ReplayableError("CONFIG_INVALID", `${flag}: ${path} holds no events; give a non-empty file`);
  }
  return lines;
}
