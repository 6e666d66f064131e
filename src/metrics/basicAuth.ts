/**
 * HTTP basic authentication of the metrics endpoint (RFC 7617) against bcrypt hashes, as the
 * Prometheus exporters' `basic_auth_users` does: an unknown user is compared with a dummy hash
 * too, so the answer takes as long as for a wrong password; a verified (user, password) pair is
 * remembered by its SHA-256, so a scrape every few seconds does not pay bcrypt's cost each time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import bcrypt from "bcryptjs";

/** A bcrypt hash (cost 10) of a random string: compared against when the user is unknown. */
const DUMMY_HASH = "$2b$10$M9KoF2Gw51sVo2OFo5PwE.8SseAPs3rt89SGBXiA/CESXvQfh5Hwa";

/** Checks `Authorization: Basic ...` headers against `users` (name → bcrypt hash). */
export class BasicAuth {
  readonly #users: ReadonlyMap<string, string>;
  /** SHA-256 of "user\0password\0hash" of pairs verified once. */
  readonly #verified = new Set<string>();

  constructor(users: ReadonlyMap<string, string>) {
    this.#users = users;
  }

  /** True when no users are configured: every request passes. */
  get open(): boolean {
    return this.#users.size === 0;
  }

  /** Whether `header` (the Authorization header, if any) carries a configured user's password. */
  async check(header: string | undefined): Promise<boolean> {
    if (this.open) return true;
    const credentials = parseBasic(header);
    if (credentials === undefined) return false;
    const hash = this.#users.get(credentials.user);
    const digest = createHash("sha256")
      .update(`${credentials.user}\0${credentials.password}\0${hash ?? ""}`)
      .digest("base64");
    if (hash !== undefined && this.#remembered(digest)) return true;
    const ok = await bcrypt.compare(credentials.password, hash ?? DUMMY_HASH);
    if (!ok || hash === undefined) return false;
    if (this.#verified.size < 1000) this.#verified.add(digest);
    return true;
  }

  #remembered(digest: string): boolean {
    const wanted = Buffer.from(digest);
    let found = false;
    for (const known of this.#verified) {
      const candidate = Buffer.from(known);
      if (candidate.length === wanted.length && timingSafeEqual(candidate, wanted)) found = true;
    }
    return found;
  }
}

/** The user and password of a `Basic` Authorization header; undefined when it is not one. */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  const match = /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
