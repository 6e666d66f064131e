/**
 * The github projection on real input: the 800 GH Archive events of data/github-events/, produced
 * with `replayable produce github` and consumed with `replayable run --projection github`, as a
 * user runs them. Totals are checked against counts this test makes straight from the file, read
 * through the views of schema `github` (the projection is versioned: its tables are in github_v1).
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, scrapeMetric, startCli } from "../../helpers/process.js";
import { liveVersionGroup, uniqueName, waitFor, waitForCaughtUp, useStack } from "../../helpers/stack.js";

const FILE = "data/github-events/2021-07-21-gharchive-800.jsonl";

const stack = useStack();

interface ProduceSummary {
  records: number;
  events: number;
  duplicates: number;
  checksum: string;
}

async function produceGithub(topic: string, file: string, extra: string[] = []): Promise<ProduceSummary> {
  const produced = await runCli(["produce", "github", "--topic", topic, "--file", file, "--json", ...extra]);
  expect(produced.stderr).toBe("");
  expect(produced.code).toBe(0);
  return JSON.parse(produced.stdout) as ProduceSummary;
}

/** Runs one member until the group has committed the high watermark; returns its /metrics counters. */
async function consume(topic: string): Promise<{ applied: number; eventIdDuplicates: number; all: number }> {
  // A versioned projection's member joins its version's group, made by migrate.
  const group = await liveVersionGroup(stack.db, "github");
  const member = startCli(["run", "--projection", "github", "--topic", topic, "--no-migrate"], {
    DATABASE_URL: stack.db.url,
  });
  try {
    const port = await member.metricsPort();
    await waitForCaughtUp(stack.admin, group, topic);
    // The counters follow the offset commit within a moment.
    const applied = await waitFor("the applied counter to settle", async () => {
      const a = await scrapeMetric(port, "replayable_records_applied_total", { topic });
      const d = await scrapeMetric(port, "replayable_duplicates_total", { topic });
      const ends = await stack.admin.topicOffsets(topic);
      const records = ends.reduce(
        (n, e) => n + Number(BigInt(e.highWatermark) - BigInt(e.logStartOffset)),
        0,
      );
      return a + d >= records ? a : undefined;
    });
    return {
      applied,
      eventIdDuplicates: await scrapeMetric(port, "replayable_duplicates_total", { topic, key: "event_id" }),
      all: await scrapeMetric(port, "replayable_duplicates_total", { topic }),
    };
  } finally {
    member.child.kill("SIGTERM");
    expect((await member.exited).code).toBe(0);
  }
}

async function rows<T>(sql: string): Promise<T[]> {
  return (await stack.db.pool.query(sql)).rows as T[];
}

describe("github projection", () => {
  it("the 800 events with 10% re-sent: each applied once, duplicates = re-sent, totals = counts from the file", async () => {
    const topic = uniqueName("github");
    const summary = await produceGithub(topic, FILE, ["--duplicate-rate", "0.1", "--seed", "5"]);
    expect(summary).toMatchObject({ records: 880, events: 800, duplicates: 80 });

    const counts = await consume(topic);
    expect(counts.applied).toBe(800);
    expect(counts.eventIdDuplicates).toBe(80);
    expect(counts.all).toBe(80);

    // Counts straight from the file, without the projection's code.
    const perType = new Map<string, number>();
    const perRepo = new Map<string, number>();
    const perActor = new Map<string, { pushes: number; commits: number }>();
    for (const line of readFileSync(FILE, "utf8")
      .split("\n")
      .filter((l) => l !== "")) {
      const e = JSON.parse(line) as { type: string; repo: string; actor: string; payload: { size?: number } };
      perType.set(e.type, (perType.get(e.type) ?? 0) + 1);
      perRepo.set(e.repo, (perRepo.get(e.repo) ?? 0) + 1);
      if (e.type === "PushEvent") {
        const a = perActor.get(e.actor) ?? { pushes: 0, commits: 0 };
        perActor.set(e.actor, { pushes: a.pushes + 1, commits: a.commits + e.payload.size! });
      }
    }
    const types = await rows<{ event_type: string; n: string }>(
      "SELECT event_type, sum(events)::text AS n FROM github.github_repo_activity GROUP BY event_type",
    );
    expect(new Map(types.map((r) => [r.event_type, Number(r.n)]))).toEqual(perType);
    const repos = await rows<{ repo: string; n: string }>(
      "SELECT repo, sum(events)::text AS n FROM github.github_repo_activity GROUP BY repo",
    );
    expect(new Map(repos.map((r) => [r.repo, Number(r.n)]))).toEqual(perRepo);
    const actors = await rows<{ actor: string; pushes: string; commits: string }>(
      "SELECT actor, pushes, commits FROM github.github_actor_pushes",
    );
    expect(
      new Map(actors.map((a) => [a.actor, { pushes: Number(a.pushes), commits: Number(a.commits) }])),
    ).toEqual(perActor);
    const [ids] = await rows<{ n: string }>(
      "SELECT count(*) AS n FROM replayable.processed_events WHERE projection = 'github@v1'",
    );
    expect(ids?.n).toBe("800");
    const [dead] = await rows<{ n: string }>("SELECT count(*) AS n FROM replayable.dead_letters");
    expect(dead?.n).toBe("0");

    const checksum = await runCli([
      "checksum",
      "--projection",
      "github",
      "--output",
      "json",
      "--database-url",
      stack.db.url,
    ]);
    expect(checksum.code).toBe(0);
    expect((JSON.parse(checksum.stdout) as { stateChecksum: string }).stateChecksum).toBe(summary.checksum);
  });

  it("keeps event ids exactly: leading zeros and values above 2^53 round-trip into processed_events", async () => {
    // As numbers, "000123" = "123" and "9007199254740993" = "9007199254740992": four distinct ids only as strings.
    const ids = ["000123", "123", "9007199254740993", "9007199254740992"];
    const file = join(mkdtempSync(join(tmpdir(), "replayable-github-")), "ids.jsonl");
    writeFileSync(
      file,
      ids
        .map((id, i) =>
          JSON.stringify({
            id,
            type: "PushEvent",
            actor: `user-${i}`,
            repo: "org/repo",
            payload: { size: 1 },
          }),
        )
        .join("\n"),
    );
    const topic = uniqueName("github-ids");
    expect(await produceGithub(topic, file)).toMatchObject({ records: 4, events: 4, duplicates: 0 });

    const counts = await consume(topic);
    expect(counts.applied).toBe(4);
    expect(counts.all).toBe(0);
    const stored = await rows<{ event_id: string }>(
      "SELECT event_id FROM replayable.processed_events WHERE projection = 'github@v1' ORDER BY event_id",
    );
    expect(stored.map((r) => r.event_id)).toEqual([...ids].sort());
    const [activity] = await rows<{ events: string }>(
      "SELECT events FROM github.github_repo_activity WHERE repo = 'org/repo' AND event_type = 'PushEvent'",
    );
    expect(activity?.events).toBe("4");
  });

  it("produce github refuses a missing file, a bad line and a bad rate before producing anything", async () => {
    const topic = uniqueName("github-bad");
    const missing = await runCli(["produce", "github", "--topic", topic, "--file", "no/such.jsonl"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--file: cannot read no/such.jsonl");

    const file = join(mkdtempSync(join(tmpdir(), "replayable-github-")), "bad.jsonl");
    const good = '{"id":"1","type":"PushEvent","actor":"a","repo":"o/r","payload":{"size":1}}';
    writeFileSync(file, `${good}\n${good.replace('"1"', '"2"').replace('"size":1', '"size":"many"')}\n`);
    const badLine = await runCli(["produce", "github", "--topic", topic, "--file", file]);
    expect(badLine.code).toBe(2);
    expect(badLine.stderr).toContain(`${file} line 2: field payload.size of a PushEvent must be`);

    const badRate = await runCli([
      "produce",
      "github",
      "--topic",
      topic,
      "--file",
      FILE,
      "--duplicate-rate",
      "1.5",
    ]);
    expect(badRate.code).toBe(2);
    expect(badRate.stderr).toContain("--duplicate-rate");

    expect(await stack.admin.listTopics()).not.toContain(topic);
  });
});
