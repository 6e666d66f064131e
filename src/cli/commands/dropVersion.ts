/**
 * `replayable drop-version --projection P --version N`: remove a version that is not live: its
 * consumer group in Kafka, then its schema, migrations table and dedupe state (docs/design.md
 * "Blue/green versions").
 */
import { Command } from "commander";
import { createPool } from "../../db/pool.js";
import { dropVersion } from "../../versions/dropVersion.js";
import { resolveVersion } from "../../versions/resolveVersion.js";
import {
  action,
  cliAdmin,
  cliLogger,
  configFrom,
  outputOption,
  printJson,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { versionOption, versionedProjection } from "../versionCommand.js";

interface DropFlags extends ConnectionFlags {
  projection?: string;
  version: string;
  output: "table" | "json";
}

/** Builds the `drop-version` command. */
export function dropVersionCommand(): Command {
  return withConnectionOptions(new Command("drop-version"))
    .description(
      "remove a version of a versioned projection that is not live: its consumer group, then its schema and its dedupe state (checkpoints, event ids, dead letters); run it again to finish one that was interrupted",
    )
    .option("--projection <name>", "the versioned projection (env REPLAYABLE_PROJECTION)")
    .requiredOption("--version <n>", "the version to drop (refused for the live one)")
    .addOption(outputOption())
    .action(action(dropAction));
}

/** Drops the version and prints what was removed. */
async function dropAction(flags: DropFlags): Promise<void> {
  const setup = await configFrom(flags, { REPLAYABLE_PROJECTION: flags.projection });
  const { config } = setup;
  const projection = versionedProjection(setup, "drop-version");
  const version = versionOption(flags.version);
  const pool = createPool({ connectionString: config.databaseUrl, max: 2 });
  try {
    const { row } = await resolveVersion(pool, projection, version);
    const admin = await cliAdmin(config, cliLogger(config), {
      groupId: row.groupId,
      groupOperation: "Delete",
    });
    try {
      const outcome = await dropVersion(admin, pool, projection, version);
      if (flags.output === "json") printJson(outcome);
      if (outcome.kind === "refused") {
        process.stderr.write(`replayable: drop-version refused, nothing changed: ${outcome.message}\n`);
        process.exitCode = 1;
      } else if (flags.output !== "json") {
        const d = outcome.deleted;
        process.stdout.write(
          `Dropped version ${outcome.version} of projection ${projection.name}: consumer group ${outcome.group.groupId} (${outcome.group.deletion === "deleted" ? "deleted" : "already gone"}), schema ${outcome.schema} and its dedupe state (${d.checkpoints} checkpoints, ${d.eventIds} event ids, ${d.deadLetters} dead letters) (audit row ${outcome.auditId})\n`,
        );
      }
    } finally {
      await admin.close();
    }
  } finally {
    await pool.end();
  }
}
