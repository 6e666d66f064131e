/** The github projection's derived tables, in the PostgreSQL schema `github`. */
import { sql } from "drizzle-orm";
import { bigint, pgSchema, primaryKey, text } from "drizzle-orm/pg-core";

export const githubSchema = pgSchema("github");

/** Events per repository and event type: +1 per event (only dedupe keeps this right). */
export const githubRepoActivity = githubSchema.table(
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
export const githubActorPushes = githubSchema.table("github_actor_pushes", {
  actor: text("actor").primaryKey(),
  pushes: bigint("pushes", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
  commits: bigint("commits", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
});
