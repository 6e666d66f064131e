/**
 * HTTP basic authentication of the metrics endpoint (RFC 7617) against bcrypt hashes, as the
 * Prometheus exporters' `basic_auth_users` does: an unknown user is compared with a dummy hash
 * of the same cost as the configured hashes (the highest of them), so the answer takes as long as
 * for a wrong password and names no user. A verified (user, password) pair is remembered by its
 * SHA-256, so a scrape every few seconds does not pay bcrypt's cost each time; so is a failed one
 * (the last {@link FAILED_REMEMBERED}), so repeating a wrong password costs one bcrypt, not one per
 * request (issue 26 item 9, docs/security.md "Metrics endpoint"). Pairs seen for the first time are
 * compared one at a time, at most {@link MAX_WAITING} waiting: a flood of distinct wrong passwords
 * costs at most one bcrypt at a time on the consumer's thread, and the rest are answered `busy`.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import bcrypt from "bcryptjs";

/** How many failed (user, password) pairs are remembered, the oldest forgotten first. */
export const FAILED_REMEMBERED = 1000;

/** How many first-seen pairs may wait for their bcrypt comparison; more are answered `busy`. */
export const MAX_WAITING = 8;

/** What {@link BasicAuth.verify} found: a configured user's password, a refusal, or no turn for bcrypt now. */
export type AuthOutcome = "ok" | "refused" | "busy";

/** bcrypt's compare: whether `password` matches `hash`. Injected by tests to count calls. */
export type BcryptCompare = (password: string, hash: string) => Promise<boolean>;

/** Checks `Authorization: Basic ...` headers against `users` (name → bcrypt hash). */
export class BasicAuth {
  readonly #users: ReadonlyMap<string, string>;
  readonly #compare: BcryptCompare;
  /** A hash of a random string at the configured hashes' cost, compared against for an unknown user. */
  readonly #dummyHash: string;
  /** SHA-256 of "user\0password\0hash" of pairs verified once. */
  readonly #verified = new Set<string>();
  /** SHA-256 of pairs that failed, oldest first (a Map keeps insertion order). */
  readonly #failed = new Map<string, true>();
  /** The bcrypt comparisons, one at a time: each starts when the one before it has settled. */
  #comparisons: Promise<void> = Promise.resolve();
  /** Comparisons asked and not yet settled (the one running included). */
  #waiting = 0;

  /**
   * @param users user name → bcrypt hash; empty: no authentication.
   * @param compare bcrypt's compare (default bcryptjs's).
   */
  constructor(users: ReadonlyMap<string, string>, compare: BcryptCompare = (p, h) => bcrypt.compare(p, h)) {
    this.#users = users;
    this.#compare = compare;
    const costs = [...users.values()].map((hash) => bcrypt.getRounds(hash));
    // Cost 4 when there are no users: the hash is never compared then.
    this.#dummyHash = bcrypt.hashSync(randomBytes(16).toString("hex"), Math.max(4, ...costs));
  }

  /** True when no users are configured: every request passes. */
  get open(): boolean {
    return this.#users.size === 0;
  }

  /** Whether `header` (the Authorization header, if any) carries a configured user's password; `busy` counts as no. */
  async check(header: string | undefined): Promise<boolean> {
    return (await this.verify(header)) === "ok";
  }

  /**
   * Checks `header` (the Authorization header, if any): `ok` for a configured user's password,
   * `refused` otherwise, `busy` when a bcrypt comparison would be needed and {@link MAX_WAITING}
   * already wait for theirs (answer 429: nothing was checked).
   */
  async verify(header: string | undefined): Promise<AuthOutcome> {
    if (this.open) return "ok";
    const credentials = parseBasic(header);
    if (credentials === undefined) return "refused";
    const hash = this.#users.get(credentials.user);
    const digest = createHash("sha256")
      .update(`${credentials.user}\0${credentials.password}\0${hash ?? ""}`)
      .digest("base64");
    if (hash !== undefined && this.#remembered(digest)) return "ok";
    if (this.#failed.has(digest)) return "refused";
    if (this.#waiting >= MAX_WAITING) return "busy";
    this.#waiting += 1;
    const turn = this.#comparisons.then(() => this.#compare(credentials.password, hash ?? this.#dummyHash));
    this.#comparisons = turn.then(
      () => undefined,
      () => undefined,
    );
    let ok: boolean;
    try {
      ok = await turn;
    } finally {
      this.#waiting -= 1;
    }
    if (!ok || hash === undefined) {
      this.#failed.set(digest, true);
      if (this.#failed.size > FAILED_REMEMBERED) this.#failed.delete(this.#failed.keys().next().value!);
      return "refused";
    }
    if (this.#verified.size < 1000) this.#verified.add(digest);
    return "ok";
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
