/**
 * A changed github projection, as a user writes one: the shipped projection plus a new column,
 * `github_repo_activity.last_event_at`, the time (`created_at`) of the newest event per repository
 * and event type. It reuses the shipped parts (exported by replayable) and adds its own:
 * - migrations/0000_github.sql is the shipped projection's migration (drizzle/github-versioned/,
 *   the tables every version has), migrations/0001_last_event_at.sql adds the column. Unqualified
 *   names: each version runs them in its own schema `github_vN`.
 * - decode: the shipped one, plus `created_at` (a UTC time `YYYY-MM-DDTHH:mm:SSZ`, as GH Archive
 *   writes it); apply: the shipped counts, plus `last_event_at = GREATEST(last_event_at, created_at)`.
 *
 * It keeps the name `github`, so it replaces the shipped projection for every command given this
 * file (`--config examples/github-new-column/replayable.config.ts`), and it is versioned: deploy it
 * as a new version beside the live one and promote it (docs/replay.md "Worked example"):
 *   replayable rebuild --projection github --group G --topic T --blue-green --execute --config <this file>
 *   replayable run --projection github --version 2 --topic T --config <this file>
 *   replayable promote --projection github --version 2 --topic T --allow-different --config <this file>
 * Readers then see the new column in the view `github.github_repo_activity`.
 */
import {
  addGithubCounts,
  decodeGithubEventValue,
  defineConfig,
  defineProjection,
  githubProjection,
  PermanentRecordError,
  type ApplyContext,
  type GithubEvent,
  type KafkaRecord,
} from "replayable";

/** A github event with the time GitHub recorded it. */
interface TimedGithubEvent extends GithubEvent {
  /** `created_at`, an ISO 8601 UTC time, e.g. `2021-07-21T06:00:00Z`. */
  readonly createdAt: string;
}

const UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** The shipped decode, plus `created_at`; a record without a valid one is dead-lettered. */
function decode(record: KafkaRecord): TimedGithubEvent {
  const event = decodeGithubEventValue(record.value);
  // decodeGithubEventValue has checked that the value is a JSON object.
  const createdAt = (JSON.parse(record.value!.toString("utf8")) as { created_at?: unknown }).created_at;
  if (typeof createdAt !== "string" || !UTC_TIME.test(createdAt) || Number.isNaN(Date.parse(createdAt)))
    throw new PermanentRecordError(
      "DECODE_FAILED",
      `field created_at must be a UTC time such as "2021-07-21T06:00:00Z", got ${JSON.stringify(createdAt ?? null)}`,
    );
  return { ...event, createdAt };
}

/**
 * The shipped counts, then the newest time per (repo, event type) in one UPDATE: GREATEST skips
 * NULL (PostgreSQL "Conditional Expressions"), so the first event sets it. Re-applying the same
 * event could not change it, but dedupe keeps the counts right anyway.
 */
async function apply(ctx: ApplyContext, events: readonly TimedGithubEvent[]): Promise<void> {
  await addGithubCounts(ctx, events);
  const newest = new Map<string, TimedGithubEvent>();
  for (const e of events) {
    const key = JSON.stringify([e.repo, e.type]);
    const seen = newest.get(key);
    if (seen === undefined || Date.parse(e.createdAt) > Date.parse(seen.createdAt)) newest.set(key, e);
  }
  const rows = [...newest.values()];
  await ctx.client.query(
    `UPDATE github_repo_activity AS a SET last_event_at = GREATEST(a.last_event_at, n.at)
     FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS n(repo, event_type, at)
     WHERE a.repo = n.repo AND a.event_type = n.event_type`,
    [rows.map((e) => e.repo), rows.map((e) => e.type), rows.map((e) => e.createdAt)],
  );
}

const github = defineProjection<TimedGithubEvent>({
  name: githubProjection.name,
  versioned: true,
  dedupe: githubProjection.dedupe,
  topics: githubProjection.defaultTopics,
  tables: githubProjection.tables,
  migrations: "./migrations",
  decode,
  apply: (ctx, { value }) => apply(ctx, [value]),
  applyBatch: (ctx, records) =>
    apply(
      ctx,
      records.map((r) => r.value),
    ),
});

export default defineConfig({ projections: [github] });
