import { defineConfig } from "drizzle-kit";

/**
 * drizzle-kit: generates the shipped github projection's migrations into drizzle/github-versioned/
 * from its schema file (`npm run db:generate:github`). The projection is versioned: the tables are
 * unqualified and each version's migrations run with `search_path` set to its schema `github_vN`
 * (docs/design.md "Blue/green versions"). drizzle/github/ holds the migration of the
 * non-versioned layout released before, never edited.
 */
export default defineConfig({
  dialect: "postgresql",
  schema: ["./src/projections/github/schema.ts"],
  out: "./drizzle/github-versioned",
});
