/**
 * The github projection: counts over real GitHub public events (GH Archive).
 * - `github_repo_activity`: `events += 1` per (repo, event type);
 * - `github_actor_pushes`: per PushEvent, `pushes += 1` and `commits += payload.size`.
 * Both are increments, not idempotent: only dedupe (by the event's JSON field `id`) keeps them right.
 *
 * Versioned (docs/design.md "Blue/green versions"): the code writes unqualified table names, which
 * the engine's `search_path` resolves to the version applied (`github_vN`); readers use the views
 * `github.github_repo_activity` and `github.github_actor_pushes`. Migrations:
 * drizzle/github-versioned/. The parts are exported (src/index.ts) so that a changed projection
 * can reuse them: examples/github-new-column/replayable.config.ts.
 */
import { sql } from "drizzle-orm";
import type { ApplyContext, DecodedRecord, Projection } from "../../projection.js";
import { githubStateOf } from "./checksum.js";
import { decodeGithubEvent, type GithubEvent } from "./events.js";
import { githubActorPushes, githubRepoActivity } from "./schema.js";

/**
 * Adds the counts of `events` to the derived tables, in the transaction of `ctx`: one upsert per
 * table (the batch's counts summed per key first, so the keys of one statement are distinct).
 * Unqualified table names: call it in a transaction whose `search_path` is the version's schema.
 */
export async function addGithubCounts(ctx: ApplyContext, events: readonly GithubEvent[]): Promise<void> {
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

/** Its name, also the stable schema of its views and the prefix of its versions' schemas. */
export const GITHUB_PROJECTION = "github";

/**
 * The github projection, deduplicated by the JSON field `id` (a string, kept exactly). `tables`
 * are the stable names readers use (views of the live version).
 */
export const githubProjection: Projection<GithubEvent> = {
  name: GITHUB_PROJECTION,
  dedupe: { kind: "event-id", field: "id" },
  defaultTopics: ["github-events"],
  tables: ["github.github_repo_activity", "github.github_actor_pushes"],
  decode: decodeGithubEvent,
  apply: (ctx: ApplyContext, { value }: DecodedRecord<GithubEvent>) => addGithubCounts(ctx, [value]),
  // Set-based: the batch's counts summed per key, then one upsert per table.
  applyBatch: (ctx: ApplyContext, records: readonly DecodedRecord<GithubEvent>[]) =>
    addGithubCounts(
      ctx,
      records.map((r) => r.value),
    ),
};
