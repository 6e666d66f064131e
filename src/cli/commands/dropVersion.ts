/**
 * `replayable drop-version --projection P --version N`: remove a version that is not live: its
 * consumer group in Kafka, then its schema, migrations table and dedupe state (docs/design.md
 * "Blue/green versions"). A dry run unless `--execute`, like `replay`, `rebuild` and `prune`.
 */
import { Command } from "commander";
import { createPool } from "../../db/pool.js";
import { dropVersion, type DropOutcome } from "../../versions/dropVersion.js";
import { planDropVersion, type DropPlan } from "../../versions/dropVersionPlan.js";
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
  execute?: boolean;
  checksums?: boolean;
  output: "table" | "json";
}

/** Builds the `drop-version` command. */
export function dropVersionCommand(): Command {
  return withConnectionOptions(new Command("drop-version"))
    .description(
      "remove a version of a versioned projection that is not live: its consumer group, then its schema and its dedupe state (checkpoints, event ids, dead letters); a dry run unless --execute; run it again to finish one that was interrupted",
    )
    .option("--projection <name>", "the versioned projection (env REPLAYABLE_PROJECTION)")
    .requiredOption("--version <n>", "the version to drop (refused for the live one)")
    .option("--execute", "drop it (default: only print what it would delete)")
    .option(
      "--checksums",
      "also an MD5 of each table's rows, in the dry run's output and the drop's audit row (reads and sorts every row: slow on large tables); default: row counts",
    )
    .addOption(outputOption())
    .action(action(dropAction));
}

/** The dry run's report: what `--execute` would delete. */
function planText(projection: string, p: DropPlan): string {
  const tables =
    p.tables.length === 0
      ? " (no tables)"
      : `: ${p.tables.map((t) => `table ${t.table} (${t.rows} rows${t.md5 === undefined ? "" : `, md5 ${t.md5}`})`).join(", ")}`;
  const d = p.dedupe;
  return [
    `Dry run: would drop version ${p.version} (${p.state}) of projection ${projection}:`,
    `  consumer group ${p.group.groupId} (committed offsets on ${p.group.committedPartitions} partitions)`,
    `  schema ${p.schema}${tables}`,
    `  migrations table replayable.${p.migrationsTable}`,
    `  dedupe state: ${d.checkpoints} checkpoints, ${d.eventIds} event ids, ${d.deadLetters} dead letters`,
    `Nothing changed: run it again with --execute to drop it.`,
    "",
  ].join("\n");
}

function droppedText(projection: string, o: Extract<DropOutcome, { kind: "dropped" }>): string {
  const d = o.deleted;
  return `Dropped version ${o.version} of projection ${projection}: consumer group ${o.group.groupId} (${o.group.deletion === "deleted" ? "deleted" : "already gone"}), schema ${o.schema} and its dedupe state (${d.checkpoints} checkpoints, ${d.eventIds} event ids, ${d.deadLetters} dead letters) (audit row ${o.auditId})\n`;
}

/** Drops the version (with --execute; else prints what it would drop) and prints what was removed. */
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
      const options = { checksums: flags.checksums === true };
      const outcome =
        flags.execute === true
          ? await dropVersion(admin, pool, projection, version, options)
          : await planDropVersion(admin, pool, projection, version, options);
      if (flags.output === "json") printJson(outcome);
      if (outcome.kind === "refused") {
        process.stderr.write(`replayable: drop-version refused, nothing changed: ${outcome.message}\n`);
        process.exitCode = 1;
      } else if (flags.output !== "json") {
        process.stdout.write(
          outcome.kind === "plan"
            ? planText(projection.name, outcome)
            : droppedText(projection.name, outcome),
        );
      }
    } finally {
      await admin.close();
    }
  } finally {
    await pool.end();
  }
}
