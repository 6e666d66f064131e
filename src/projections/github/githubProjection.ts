/**
 * The github projection: counts over real GitHub public events (GH Archive).
 * - `github_repo_activity`: `events += 1` per (repo, event type);
 * - `github_actor_pushes`: per PushEvent, `pushes += 1` and `commits += payload.size`.
 * Both are increments, not idempotent: only dedupe (by the event's JSON field `id`) keeps them right.
 */
import { sql } from "drizzle-orm";
import type { ApplyContext, DecodedRecord, Projection } from "../../projection.js";
import { githubStateOf } from "./checksum.js";
import { decodeGithubEvent, type GithubEvent } from "./events.js";
import { githubActorPushes, githubRepoActivity } from "./schema.js";

/** Adds `state`'s counts to the derived tables (one upsert per table; keys are distinct). */
async function addCounts(ctx: ApplyContext, events: readonly GithubEvent[]): Promise<void> {
  const state = githubStateOf(events);
  if (state.repoActivity.length > 0) {
    await ctx.db
      .insert(githubRepoActivity)
      .values(state.repoActivity.map((r) => ({ repo: r.repo, eventType: r.eventType, events: r.events })))
      .onConflictDoUpdate({
        target: [githubRepoActivity.repo, githubRepoActivity.eventType],
        set: { events: sql`${githubRepoActivity.events} + excluded.events` },
      });
  }
  if (state.actorPushes.length > 0) {
    await ctx.db
      .insert(githubActorPushes)
      .values(state.actorPushes.map((a) => ({ actor: a.actor, pushes: a.pushes, commits: a.commits })))
      .onConflictDoUpdate({
        target: githubActorPushes.actor,
        set: {
          pushes: sql`${githubActorPushes.pushes} + excluded.pushes`,
          commits: sql`${githubActorPushes.commits} + excluded.commits`,
        },
      });
  }
}

/** The github projection, deduplicated by the JSON field `id` (a string, kept exactly). */
export const githubProjection: Projection<GithubEvent> = {
  name: "github",
  dedupe: { kind: "event-id", field: "id" },
  defaultTopics: ["github-events"],
  tables: ["github.github_repo_activity", "github.github_actor_pushes"],
  decode: decodeGithubEvent,
  apply: (ctx: ApplyContext, { value }: DecodedRecord<GithubEvent>) => addCounts(ctx, [value]),
  // Set-based: the batch's counts summed per key, then one upsert per table.
  applyBatch: (ctx: ApplyContext, records: readonly DecodedRecord<GithubEvent>[]) =>
    addCounts(
      ctx,
      records.map((r) => r.value),
    ),
};
