/**
 * What readers of the github projection query: the views `github.github_repo_activity` and
 * `github.github_actor_pushes` over the live version's tables (`github_vN`, docs/design.md
 * "Blue/green versions"). They never name a version, so a `promote` or `rollback` switches them in
 * one transaction. Declared `.existing()`: replayable's versions code creates them, not drizzle-kit.
 * A later version may add columns; these declare the ones every version has.
 */
import { bigint, pgSchema, text } from "drizzle-orm/pg-core";

/** The stable schema of the github projection: views only. */
export const githubViewSchema = pgSchema("github");

/** `github.github_repo_activity`: events per (repo, event type) of the live version. */
export const githubRepoActivityView = githubViewSchema
  .view("github_repo_activity", {
    repo: text("repo").notNull(),
    eventType: text("event_type").notNull(),
    events: bigint("events", { mode: "bigint" }).notNull(),
  })
  .existing();

/** `github.github_actor_pushes`: pushes and commits per actor of the live version. */
export const githubActorPushesView = githubViewSchema
  .view("github_actor_pushes", {
    actor: text("actor").notNull(),
    pushes: bigint("pushes", { mode: "bigint" }).notNull(),
    commits: bigint("commits", { mode: "bigint" }).notNull(),
  })
  .existing();
