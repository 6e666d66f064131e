/**
 * Crashes during a blue/green rebuild, against the real Kafka and PostgreSQL: the shadow's member
 * SIGKILLed during catch-up resumes from its own checkpoints when run again (its tables then equal
 * the live version's: nothing applied twice or lost), and the CLI SIGKILLed inside promote's
 * transaction changes nothing (readers keep version 1); promoting again succeeds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { testAdmin } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

describe("blue/green rebuild after crashes", () => {
  it("a shadow member killed during catch-up resumes; a promote killed before COMMIT changes nothing", async () => {
    const bg = await versionedStack(admin, "bgc", 60, { REPLAYABLE_MAX_BATCH_RECORDS: "5" });
    const { db, name } = bg;
    const live = bg.run([]);
    await bg.waitForCaughtUp(1);
    live.signal("SIGTERM");
    expect((await live.exited).code).toBe(0);
    await bg.createVersion();

    // The shadow's member dies (SIGKILL) right after its third COMMIT, before that offset commit.
    const killed = bg.start(["run", "--version", "2"], { REPLAYABLE_FAILPOINTS: "after-db-commit=kill@3" });
    expect((await killed.exited).signal).toBe("SIGKILL");
    const partial = await db.pool.query<{ n: string }>(
      "SELECT coalesce(sum(next_offset), 0)::text AS n FROM replayable.checkpoints WHERE projection = $1",
      [`${name}@v2`],
    );
    expect(Number(partial.rows[0]!.n)).toBeGreaterThan(0);
    expect(Number(partial.rows[0]!.n)).toBeLessThan(60);
    const shadow = bg.run(["--version", "2"]);
    await bg.waitForCaughtUp(2, 120_000);
    await bg.stop(shadow, 2);

    // promote dies (SIGKILL) inside its transaction, after switching the views, before COMMIT.
    const dying = bg.start(["promote", "--projection", name, "--version", "2"], {
      REPLAYABLE_FAILPOINTS: "promote-before-commit=kill",
    });
    expect((await dying.exited).signal).toBe("SIGKILL");
    const views = async () =>
      (
        await db.pool.query<{ definition: string }>(
          "SELECT definition FROM pg_views WHERE schemaname = $1 AND viewname = 'totals'",
          [name],
        )
      ).rows.map((r) => /FROM (\S+)\.totals/.exec(r.definition)?.[1]);
    expect(await views()).toEqual([`${name}_v1`]);
    expect(await bg.states()).toEqual([
      [1, "live"],
      [2, "shadow"],
    ]);

    // Run again: the shadow equals the live version (the killed member applied nothing twice).
    const promoted = await bg.cli(["promote", "--projection", name, "--version", "2"]);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toMatch(/totals +5 +[0-9a-f]{32} +5 +[0-9a-f]{32} +yes/);
    expect(await views()).toEqual([`${name}_v2`]);
    expect(await bg.states()).toEqual([
      [1, "retired"],
      [2, "live"],
    ]);
    const totals = await db.pool.query<{ sales: string }>(
      `SELECT sum(sales)::text AS sales FROM "${name}".totals`,
    );
    expect(totals.rows[0]?.sales).toBe("60");
  });
});
