/**
 * Two `rebuild --blue-green --execute` of one projection at once (docs/replay.md "The steps"): both
 * plan version 2; the winner creates it and goes on as its member; the loser, whose plan read the
 * registry before the winner registered version 2 and the group after the winner's member joined,
 * is refused as `VERSION_TAKEN`, naming the other rebuild (it used to call the winner "an active
 * member" to be stopped), and changes nothing.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { createLogger } from "../../../src/logger.js";
import type { RegisteredProjection } from "../../../src/projections/registry.js";
import { blueGreenRebuild } from "../../../src/versions/blueGreenRebuild.js";
import { testAdmin, waitFor } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

describe("two blue/green rebuilds at once", () => {
  it("the loser is told another rebuild created version 2, not that a member must be stopped, and changes nothing", async () => {
    const bg = await versionedStack(admin, "bgrace", 10);
    const { db, dir, name, topic } = bg;
    // The loser, in this process: the projection as the config file declares it.
    const projection: RegisteredProjection = {
      name,
      versioned: true,
      origin: "config",
      dedupe: { kind: "offset" },
      defaultTopics: [topic],
      tables: [`${name}.totals`],
      migrationsFolder: join(dir, "migrations"),
      decode: (record) => record.value,
      apply: () => Promise.resolve(),
    };
    // Its plan reads the registry (version 1 only), then describes group -v2: held there until
    // the winner has registered version 2 and its member has joined that group.
    let reached!: () => void;
    const describing = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = Object.create(admin) as ClusterAdmin;
    held.describeGroup = async (groupId: string) => {
      if (groupId === `${name}-v2`) {
        reached();
        await released;
      }
      return admin.describeGroup(groupId);
    };
    const loser = blueGreenRebuild({
      admin: held,
      pool: db.pool,
      projection,
      groupId: name,
      topics: [],
      execute: true,
      force: false,
      log: createLogger("silent"),
    });
    await describing;

    const winner = bg.start(["rebuild", "--projection", name, "--group", name, "--blue-green", "--execute"]);
    // Version 2 registered, then its member joined (KafkaJS sets the group's offsets through a
    // short-lived member of its own before that: not the one waited for).
    await waitFor(`version 2 registered and its member (the winner) in group ${name}-v2`, async () => {
      const registered = await db.pool.query(
        "SELECT 1 FROM replayable.projection_versions WHERE projection = $1 AND version = 2",
        [name],
      );
      if (registered.rowCount !== 1) return undefined;
      return (await admin.describeGroup(`${name}-v2`)).members.length > 0 ? true : undefined;
    });
    release();
    const outcome = await loser;

    expect(outcome.kind).toBe("refused");
    const refused = outcome as Extract<typeof outcome, { kind: "refused" }>;
    expect(refused.reason).toBe("VERSION_TAKEN");
    expect(refused.message).toContain(
      `another \`rebuild --blue-green\` of projection ${name} created version 2 (group ${name}-v2) while this one was preparing it`,
    );
    expect(refused.message).toContain("Run this command again only to create a further version (3)");
    expect(refused.message).not.toMatch(/active member|Stop every member/);
    // Nothing of the loser's: one version 2, one audit row for it.
    const versions = await db.pool.query<{ version: number; state: string }>(
      "SELECT version, state FROM replayable.projection_versions WHERE projection = $1 ORDER BY version",
      [name],
    );
    expect(versions.rows).toEqual([
      { version: 1, state: "live" },
      { version: 2, state: "shadow" },
    ]);
    const audits = await db.pool.query(
      "SELECT action, version FROM replayable.projection_version_audit WHERE projection = $1 ORDER BY id",
      [name],
    );
    expect(audits.rows).toEqual([
      { action: "create", version: 1 },
      { action: "create", version: 2 },
    ]);

    winner.signal("SIGTERM");
    expect((await winner.exited).code).toBe(0);
  }, 600_000);
});
