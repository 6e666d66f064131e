/**
 * `replayable rollback --projection P`: make the newest retired version live again, switching the
 * stable views in one transaction (docs/design.md "Blue/green versions").
 */
import { Command } from "commander";
import { createPool } from "../../db/pool.js";
import { rollback } from "../../versions/promote.js";
import { resolveVersion } from "../../versions/resolveVersion.js";
import { selectVersions } from "../../sql/projectionVersions.js";
import {
  action,
  cliAdmin,
  cliLogger,
  configFrom,
  intFlag,
  outputOption,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { reportSwap, versionedProjection } from "../versionCommand.js";

interface RollbackFlags extends ConnectionFlags {
  projection?: string;
  lockTimeoutMs?: string;
  output: "table" | "json";
}

/** Builds the `rollback` command. */
export function rollbackCommand(): Command {
  return withConnectionOptions(new Command("rollback"))
    .description(
      "make the previous (newest retired) version of a versioned projection live again; the version it replaces becomes a shadow",
    )
    .option("--projection <name>", "the versioned projection (env REPLAYABLE_PROJECTION)")
    .option("--lock-timeout-ms <ms>", "lock_timeout of the switch (default 5000)")
    .addOption(outputOption())
    .action(action(rollbackAction));
}

/** Rolls back and prints the outcome. */
async function rollbackAction(flags: RollbackFlags): Promise<void> {
  const setup = await configFrom(flags, { REPLAYABLE_PROJECTION: flags.projection });
  const projection = versionedProjection(setup, "rollback");
  const lockTimeoutMs = intFlag("--lock-timeout-ms", flags.lockTimeoutMs, 1, 3_600_000, 5_000);
  const pool = createPool({ connectionString: setup.config.databaseUrl, max: 2 });
  try {
    const live = await resolveVersion(pool, projection);
    const retired = (await selectVersions(pool, projection.name))
      .filter((r) => r.state === "retired")
      .sort((a, b) => b.version - a.version)[0];
    // The audit row records both versions' high watermarks: both versions' groups are checked.
    const admin = await cliAdmin(setup.config, cliLogger(setup.config), {
      groupId: live.row.groupId,
      groupOperation: "Describe",
      describedGroups: retired === undefined ? [] : [retired.groupId],
    });
    try {
      const outcome = await rollback({ admin, pool, projection, lockTimeoutMs });
      reportSwap(projection.name, "rollback", outcome, flags.output);
    } finally {
      await admin.close();
    }
  } finally {
    await pool.end();
  }
}
