/**
 * `rebuild --blue-green --execute` goes on as the new version's member, against the real Kafka and
 * PostgreSQL (docs/replay.md "Blue/green rebuild"): with version 1's member running, the command
 * alone (no `run --version 2`) consumes the whole log into version 2, logs its progress as a
 * shadow, `status` shows both versions' records done and ETA, and SIGTERM stops it gracefully
 * with exit code 0.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { runCli, type CliProcess } from "../../helpers/process.js";
import { testAdmin, waitFor } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

type Line = Record<string, unknown>;

/** The progress lines of `cli`'s stderr, parsed. */
function progressLines(cli: CliProcess): Line[] {
  return cli
    .stderr()
    .split("\n")
    .filter((l) => l.includes('"msg":"progress"'))
    .map((l) => JSON.parse(l) as Line);
}

interface VersionsStatus {
  versions: {
    version: number;
    state: string;
    progress: { recordsDone: string; lag: string; etaSeconds: number | null; eta: string };
  }[];
}

describe("rebuild --blue-green --execute runs the new version", () => {
  it("consumes the whole log into version 2 beside the live member, shows its progress, stops on SIGTERM with exit 0", async () => {
    const bg = await versionedStack(admin, "bgr", 60, {
      REPLAYABLE_MAX_BATCH_RECORDS: "5",
      REPLAYABLE_PROGRESS_INTERVAL_MS: "300",
    });
    const { db, name, cli } = bg;
    bg.run([]);
    await bg.waitForCaughtUp(1);

    const rebuild = bg.start(
      // --metrics-port as `run` takes it: the member it goes on as serves /metrics.
      ["rebuild", "--projection", name, "--group", name, "--blue-green", "--execute", "--metrics-port", "0"],
    );
    await bg.waitForCaughtUp(2, 120_000);
    expect(rebuild.stdout()).toContain(`Created version 2 of projection ${name}`);
    expect(rebuild.stdout()).toContain("Going on as version 2's member");
    expect(rebuild.stderr()).toContain("going on as version 2's member");
    expect(rebuild.stderr()).toContain('"msg":"serving /metrics, /healthz, /readyz"');
    // A group that is not the version's is refused, not silently replaced by the version's group.
    const wrongGroup = await cli(["run", "--group", "not-its-group", "--no-migrate"]);
    expect(wrongGroup.code, wrongGroup.stderr).toBe(2);
    expect(wrongGroup.stderr).toContain(
      `--group: version 1 of projection ${name} consumes as group ${name}-v1, not not-its-group`,
    );
    const totals = async (schema: string) =>
      (
        await db.pool.query<{ shop: string; sales: string; cents: string }>(
          `SELECT shop, sales, cents FROM "${schema}".totals ORDER BY shop`,
        )
      ).rows;
    const live = await totals(`${name}_v1`);
    expect(live).toHaveLength(5);
    expect(await totals(`${name}_v2`)).toEqual(live);

    // The shadow's progress line names its version and state, how far it is and what is left.
    const caughtUp = await waitFor("a progress line of the caught-up shadow", () =>
      progressLines(rebuild).find((l) => l.logPassedPercent === 100 && l.remainingLag === 0),
    );
    expect(caughtUp).toMatchObject({
      projection: `${name}@v2`,
      groupId: `${name}-v2`,
      version: 2,
      versionState: "shadow",
      etaSeconds: 0,
    });
    for (const line of progressLines(rebuild)) {
      expect(line).toMatchObject({ projection: `${name}@v2`, version: 2, versionState: "shadow" });
      // Absent before the member's first lag refresh (docs/metrics.md "Progress"): a line logged
      // that early on a loaded machine has none.
      if (line.logPassedPercent === undefined) continue;
      expect(line.logPassedPercent).toBeGreaterThanOrEqual(0);
      expect(line.logPassedPercent).toBeLessThanOrEqual(100);
    }

    const status = await cli(["status", "--projection", name, "--output", "json"]);
    expect(status.code, status.stderr).toBe(0);
    const side = JSON.parse(status.stdout) as VersionsStatus;
    const anyNumber = expect.any(Number) as number;
    expect(side.versions.map((v) => [v.version, v.state, v.progress])).toEqual([
      [
        1,
        "live",
        {
          recordsDone: "60",
          lag: "0",
          recordsPerSecond: anyNumber,
          etaSeconds: 0,
          eta: "caught up",
        },
      ],
      [
        2,
        "shadow",
        {
          recordsDone: "60",
          lag: "0",
          recordsPerSecond: anyNumber,
          etaSeconds: 0,
          eta: "caught up",
        },
      ],
    ]);
    const table = await cli(["status", "--projection", name]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/\n2 +shadow +60 +0 +[0-9.]+ +caught up/);

    rebuild.signal("SIGTERM");
    const exit = await rebuild.exited;
    expect(exit.code, rebuild.stderr().slice(-2000)).toBe(0);
    expect(rebuild.stderr()).toContain('"msg":"consumer stopped"');
  }, 600_000);

  it("--no-run and --metrics-port without --blue-green --execute are usage errors naming the flag (exit 2)", async () => {
    const result = await runCli(["rebuild", "--projection", "ledger", "--group", "g", "--no-run"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--no-run: only with --blue-green --execute");
    const metrics = await runCli([
      "rebuild",
      "--projection",
      "ledger",
      "--group",
      "g",
      "--metrics-port",
      "0",
    ]);
    expect(metrics.code).toBe(2);
    expect(metrics.stderr).toContain("--metrics-host/--metrics-port: only when the command goes on");
  });
});
