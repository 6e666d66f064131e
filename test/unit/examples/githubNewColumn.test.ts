/**
 * The changed github projection of examples/github-new-column/ starts from the shipped tables:
 * its first migration is the shipped projection's, byte for byte, so version N+1 has every table
 * and column version N has, plus its own.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

interface Journal {
  entries: { idx: number; tag: string }[];
}

const read = (path: string) => readFileSync(path, "utf8");

describe("examples/github-new-column", () => {
  it("begins with the shipped github migration, unchanged, and adds its column in the next one", () => {
    const shipped = JSON.parse(read("drizzle/github-versioned/meta/_journal.json")) as Journal;
    const example = JSON.parse(read("examples/github-new-column/migrations/meta/_journal.json")) as Journal;
    expect(example.entries.slice(0, shipped.entries.length)).toEqual(shipped.entries);
    for (const { tag } of shipped.entries)
      expect(read(`examples/github-new-column/migrations/${tag}.sql`)).toBe(
        read(`drizzle/github-versioned/${tag}.sql`),
      );
    const added = example.entries.slice(shipped.entries.length).map((e) => e.tag);
    expect(added).toEqual(["0001_last_event_at"]);
    expect(read("examples/github-new-column/migrations/0001_last_event_at.sql")).toContain(
      'ALTER TABLE "github_repo_activity" ADD COLUMN "last_event_at"',
    );
  });
});
