/**
 * The github projection's expected state: what applying each distinct event once must give,
 * the totals a person can check, and a checksum that `produce github` predicts and
 * `checksum --projection github` reads back.
 */
import { createHash } from "node:crypto";
import type { Db } from "../../db/pool.js";
import { PUSH_EVENT, type GithubEvent } from "./events.js";
import { githubActorPushesView, githubRepoActivityView } from "./views.js";

/** One row of `github.github_repo_activity`. */
export interface RepoActivityRow {
  readonly repo: string;
  readonly eventType: string;
  readonly events: bigint;
}

/** One row of `github.github_actor_pushes`. */
export interface ActorPushesRow {
  readonly actor: string;
  readonly pushes: bigint;
  readonly commits: bigint;
}

/** The content of the github projection's two derived tables. */
export interface GithubState {
  readonly repoActivity: readonly RepoActivityRow[];
  readonly actorPushes: readonly ActorPushesRow[];
}

/** Totals over a {@link GithubState}, as `produce github` and the demo print them. */
export interface GithubTotals {
  /** Sum of `events` over github_repo_activity: distinct events applied. */
  readonly events: number;
  /** Rows of github_repo_activity: distinct (repo, event type) pairs. */
  readonly repoActivityRows: number;
  /** Distinct repositories. */
  readonly repos: number;
  /** Events per event type, sorted by type. */
  readonly eventTypes: Readonly<Record<string, number>>;
  /** Rows of github_actor_pushes: distinct actors that pushed. */
  readonly actors: number;
  /** Sum of `pushes`: PushEvents applied. */
  readonly pushes: number;
  /** Sum of `commits`: sum of payload.size over the PushEvents. */
  readonly commits: number;
}

/** The state that applying each of `events` exactly once must leave in the derived tables. */
export function githubStateOf(events: Iterable<GithubEvent>): GithubState {
  const activity = new Map<string, { repo: string; eventType: string; events: bigint }>();
  const pushes = new Map<string, { actor: string; pushes: bigint; commits: bigint }>();
  for (const event of events) {
    const key = JSON.stringify([event.repo, event.type]);
    const row = activity.get(key) ?? { repo: event.repo, eventType: event.type, events: 0n };
    row.events += 1n;
    activity.set(key, row);
    if (event.type === PUSH_EVENT) {
      const p = pushes.get(event.actor) ?? { actor: event.actor, pushes: 0n, commits: 0n };
      p.pushes += 1n;
      p.commits += BigInt(event.pushSize ?? 0);
      pushes.set(event.actor, p);
    }
  }
  return { repoActivity: [...activity.values()], actorPushes: [...pushes.values()] };
}

/**
 * SHA-256 (hex) over the sorted lines `["activity",repo,type,"events"]` and
 * `["actor",actor,"pushes","commits"]` (JSON arrays, so no name can make two states collide).
 * Independent of row order.
 */
export function githubChecksum(state: GithubState): string {
  const lines = [
    ...state.repoActivity.map((r) => JSON.stringify(["activity", r.repo, r.eventType, r.events.toString()])),
    ...state.actorPushes.map((a) =>
      JSON.stringify(["actor", a.actor, a.pushes.toString(), a.commits.toString()]),
    ),
  ].sort();
  return createHash("sha256").update(lines.join("\n")).digest("hex");
}

/** Totals over `state`. Counts are JS numbers: fine below 2^53 events. */
export function githubTotals(state: GithubState): GithubTotals {
  const eventTypes = new Map<string, number>();
  const repos = new Set<string>();
  let events = 0;
  for (const r of state.repoActivity) {
    eventTypes.set(r.eventType, (eventTypes.get(r.eventType) ?? 0) + Number(r.events));
    repos.add(r.repo);
    events += Number(r.events);
  }
  let pushes = 0;
  let commits = 0;
  for (const a of state.actorPushes) {
    pushes += Number(a.pushes);
    commits += Number(a.commits);
  }
  return {
    events,
    repoActivityRows: state.repoActivity.length,
    repos: repos.size,
    eventTypes: Object.fromEntries([...eventTypes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    actors: state.actorPushes.length,
    pushes,
    commits,
  };
}

/**
 * Reads the github projection's live version into a {@link GithubState}, through the views of
 * schema `github` (the columns every version has; a later version's new columns are not read).
 */
export async function readGithubState(db: Db): Promise<GithubState> {
  const activity = await db.select().from(githubRepoActivityView);
  const pushes = await db.select().from(githubActorPushesView);
  return {
    repoActivity: activity.map((r) => ({ repo: r.repo, eventType: r.eventType, events: BigInt(r.events) })),
    actorPushes: pushes.map((a) => ({
      actor: a.actor,
      pushes: BigInt(a.pushes),
      commits: BigInt(a.commits),
    })),
  };
}
