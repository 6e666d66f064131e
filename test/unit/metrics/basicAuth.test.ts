import bcrypt from "bcryptjs";
import { describe, expect, it } from "vitest";
import { BasicAuth } from "../../../src/metrics/basicAuth.js";

/** Issue 26 item 9: bcrypt's CPU cost per request, counted (never timed). */
function counting(): { compare: (password: string, hash: string) => Promise<boolean>; hashes: string[] } {
  const hashes: string[] = [];
  return {
    hashes,
    compare: (password, hash) => {
      hashes.push(hash);
      return bcrypt.compare(password, hash);
    },
  };
}
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("BasicAuth's bcrypt work", () => {
  const users = new Map([["prometheus", bcrypt.hashSync("right", 5)]]);

  it("runs bcrypt once for a wrong password repeated, then answers from its cache of failures", async () => {
    const c = counting();
    const auth = new BasicAuth(users, c.compare);
    for (let i = 0; i < 5; i++) expect(await auth.check(basic("prometheus", "wrong"))).toBe(false);
    expect(c.hashes).toHaveLength(1);
    expect(await auth.check(basic("prometheus", "right"))).toBe(true);
    expect(await auth.check(basic("prometheus", "right"))).toBe(true);
    expect(c.hashes).toHaveLength(2);
  });

  it("compares an unknown user with a dummy hash of the configured hashes' cost, so its timing names no user", async () => {
    for (const cost of [4, 6]) {
      const c = counting();
      const auth = new BasicAuth(new Map([["a", bcrypt.hashSync("x", cost)]]), c.compare);
      expect(await auth.check(basic("nobody", "guess"))).toBe(false);
      expect(c.hashes).toHaveLength(1);
      expect(bcrypt.getRounds(c.hashes[0]!)).toBe(cost);
    }
  });

  it("runs no bcrypt for a header that is not Basic credentials", async () => {
    const c = counting();
    const auth = new BasicAuth(users, c.compare);
    expect(await auth.check("Bearer abc")).toBe(false);
    expect(await auth.check(undefined)).toBe(false);
    expect(c.hashes).toHaveLength(0);
  });
});
