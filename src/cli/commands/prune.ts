/**
 * `replayable prune`: delete a projection's event-id rows whose source offset is below their
 * partition's log start offset (those records can never be read again). A dry run unless --execute.
 */
import { Command } from "commander";
import { createPool } from "../../db/pool.js";
import { KafkaAdmin } from "../../kafka/admin.js";
import { prune } from "../../replay/prune.js";
import {
  action,
  outputOption,
  cliKafka,
  cliLogger,
  configFrom,
  printJson,
  printTable,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";

interface PruneFlags extends ConnectionFlags {
  projection: string;
  execute?: boolean;
  output: "table" | "json";
}

/** Builds the `prune` command. */
export function pruneCommand(): Command {
  return withConnectionOptions(new Command("prune"))
    .description(
      "delete event-id rows (replayable.processed_events) whose source offset is below their partition's log start offset; a dry run unless --execute",
    )
    .requiredOption("--projection <name>", "projection whose event ids to prune")
    .option("--execute", "delete the rows (default: only count them)")
    .addOption(outputOption())
    .action(
      action(async (flags: PruneFlags) => {
        const config = configFrom(flags, { REPLAYABLE_PROJECTION: flags.projection });
        const log = cliLogger(config);
        const admin = await KafkaAdmin.connect(cliKafka(config, log));
        const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
        try {
          const result = await prune({
            admin,
            pool,
            projection: config.projection,
            execute: flags.execute === true,
          });
          if (flags.output === "json") {
            printJson({ outcome: result.executed ? "executed" : "dry-run", ...result });
            return;
          }
          const out = (line: string) => process.stdout.write(`${line}\n`);
          out(
            result.executed
              ? `Pruned event ids of projection ${result.projection}:`
              : `Dry run (nothing changed): event ids of projection ${result.projection} below the log start offset:`,
          );
          printTable(
            result.partitions.map((p) => ({
              topic: p.topic,
              partition: p.partition,
              logStartOffset: p.logStartOffset ?? "(topic gone: kept)",
              eventIds: p.eventIds,
              prunable: p.prunable,
              deleted: p.deleted,
            })),
          );
          const t = result.totals;
          out(
            result.executed
              ? `Deleted ${t.deleted} of ${t.eventIds} event ids.`
              : `${t.prunable} of ${t.eventIds} event ids can be deleted; add --execute to delete them.`,
          );
        } finally {
          await admin.close();
          await pool.end();
        }
      }),
    );
}
