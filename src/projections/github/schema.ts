/**
 * The github projection's derived tables as its code and migrations write them: **unqualified**
 * names. The projection is versioned (docs/design.md "Blue/green versions"): version N keeps these
 * tables in schema `github_vN`, and the engine sets `search_path` to it in every transaction, so
 * an unqualified name resolves to the version being applied. Readers use the views of schema
 * `github` instead (./views.ts). drizzle-kit generates drizzle/github-versioned/ from this file
 * (`npm run db:generate:github`).
 */
import { sql } from "drizzle-orm";
import { bigint, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/** Events per repository and event type: +1 per event (only dedupe keeps this right). */
export const githubRepoActivity = pgTable(
  "github_repo_activity",
  {
    repo: text("repo").notNull(),
    eventType: text("event_type").notNull(),
    events: bigint("events", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
  },
  (t) => [primaryKey({ columns: [t.repo, t.eventType] })],
);

/** Pushes per actor: per PushEvent, pushes +1 and commits + payload.size. */
export const githubActorPushes = pgTable("github_actor_pushes", {
  actor: text("actor").primaryKey(),
  pushes: bigint("pushes", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
  commits: bigint("commits", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
});
