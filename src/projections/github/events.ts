/**
 * GitHub public events as GH Archive publishes them, one JSON object per record value
 * (see data/github-events/README.md): `id`, `type`, `actor`, `repo`, `payload`, ...
 * The `id` is the dedupe key (a string, kept exactly; the engine extracts it, see dedupeKeys.ts);
 * decode validates only the fields the github projection writes.
 */
import { PermanentRecordError } from "../../errors.js";
import { silentlyAlteredTextReason } from "../../text/text.js";
import { isUtf8 } from "../../engine/dedupeKeys.js";
import type { KafkaRecord } from "../../record.js";

/** Longest `type`, `repo` or `actor` accepted, in characters. */
export const MAX_GITHUB_NAME_LENGTH = 256;

/** The event type whose `payload.size` (commits in the push) feeds `github_actor_pushes`. */
export const PUSH_EVENT = "PushEvent";

/** A decoded GitHub event: what the github projection writes. */
export interface GithubEvent {
  /** e.g. `PushEvent`, `WatchEvent`; any non-empty string (GitHub adds types over time). */
  readonly type: string;
  /** Repository full name, e.g. `org-9db31e983f/repo-dfe6b38d42`. */
  readonly repo: string;
  /** Actor login, e.g. `user-dd025dc335`. */
  readonly actor: string;
  /** Commits in a PushEvent (`payload.size`), a non-negative safe integer; undefined for other types. */
  readonly pushSize: number | undefined;
}

/**
 * Decodes and validates a GitHub event record.
 * @throws PermanentRecordError DECODE_FAILED naming the field and what is valid.
 */
export function decodeGithubEvent(record: KafkaRecord): GithubEvent {
  return decodeGithubEventValue(record.value);
}

/**
 * Decodes and validates a GitHub event from the bytes of one JSON object (a record value or a
 * line of a GH Archive file): `type`, `repo`, `actor` non-empty strings of at most
 * {@link MAX_GITHUB_NAME_LENGTH} characters; for a PushEvent, `payload.size` a non-negative
 * integer below 2^53.
 * @throws PermanentRecordError DECODE_FAILED naming the field and what is valid.
 */
export function decodeGithubEventValue(value: Buffer | null): GithubEvent {
  if (value === null || value.length === 0) throw invalid("value is empty; expected a JSON object");
  if (!isUtf8(value)) throw invalid("value is not valid UTF-8");
  let data: unknown;
  try {
    data = JSON.parse(value.toString("utf8"));
  } catch (error) {
    throw invalid(`value is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(data)) throw invalid("value must be a JSON object");
  const type = name(data, "type");
  const repo = name(data, "repo");
  const actor = name(data, "actor");
  if (type !== PUSH_EVENT) return { type, repo, actor, pushSize: undefined };
  const payload = data.payload;
  if (!isObject(payload)) {
    throw invalid(`field payload of a PushEvent must be a JSON object, got ${describe(payload)}`);
  }
  const size = payload.size;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
    throw invalid(
      `field payload.size of a PushEvent must be a non-negative whole number below 2^53 (commits in the push), got ${describe(size)}`,
    );
  }
  return { type, repo, actor, pushSize: size };
}

function name(fields: Record<string, unknown>, field: string): string {
  const value = fields[field];
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_GITHUB_NAME_LENGTH) {
    throw invalid(
      `field ${field} must be a non-empty string of at most ${MAX_GITHUB_NAME_LENGTH} characters, got ${describe(value)}`,
    );
  }
  const unstorable = silentlyAlteredTextReason(value);
  if (unstorable !== undefined) throw invalid(`field ${field} ${unstorable}`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function invalid(message: string): PermanentRecordError {
  return new PermanentRecordError("DECODE_FAILED", message);
}
