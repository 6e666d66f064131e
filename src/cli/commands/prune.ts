/**
 * `replayable prune`: delete a projection's event-id rows whose source offset is below their
 * partition's log start offset (those records can never be read again), once no record of the
 * projection's topics is left unread (a re-send among them needs the id). A dry run unless --execute.
 */
import { Command } from "commander";
import { checkDatabase } from "../../db/startupCheck.js";
import { prune, type PruneResult } from "../../replay/prune.js";
import {
  action,
  outputOption,
  cliLogger,
  configFrom,
  intFlag,
  printJson,
  printTable,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { withCommandResources } from "../commandResources.js";
import { commandTarget } from "../commandTarget.js";
import {
  resolveVersionTarget,
  versionLine,
  versionTargetOption,
  type VersionTarget,
} from "../versionTarget.js";

interface PruneFlags extends ConnectionFlags {
  projection?: string;
  group?: string;
  version?: string;
  topic?: string[];
  execute?: boolean;
  waitMs?: string;
  output: "table" | "json";
}

/** Default of --wait-ms: how long `prune --execute` waits for a running group to read what is unread. */
const DEFAULT_WAIT_MS = 60_000;

/** Builds the `prune` command. */
export function pruneCommand(): Command {
  return withConnectionOptions(new Command("prune"))
    .description(
      "delete event-id rows (replayable.processed_events) whose source offset is below their partition's log start offset, once the projection has read every record of its topics; a dry run unless --execute",
    )
    .option(
      "--projection <name>",
      "projection whose event ids to prune (env REPLAYABLE_PROJECTION; default: the config file's only projection)",
    )
    .option(
      "--group <id>",
      "the projection's consumer group (env REPLAYABLE_GROUP_ID; default: the projection name; a versioned projection's version uses its own)",
    )
    .addOption(versionTargetOption())
    .option(
      "--topic <topic...>",
      "the projection's topics (env REPLAYABLE_TOPICS; default: the topics the group has committed offsets for or the projection has checkpoints for, else its default topics); topics its event ids were first seen in are always included",
    )
    .option("--execute", "delete the rows (default: only count them)")
    .option(
      "--wait-ms <ms>",
      `with --execute and members in the group: how long to wait for them to read the records unread when prune starts (0: refuse at once)`,
      String(DEFAULT_WAIT_MS),
    )
    .addOption(outputOption())
    .action(action(pruneAction));
}

/** Finds (and with `--execute` deletes) the event-id rows below their partition's log start offset, and reports it. */
async function pruneAction(flags: PruneFlags): Promise<void> {
  const setup = await configFrom(flags, {
    REPLAYABLE_PROJECTION: flags.projection,
    REPLAYABLE_GROUP_ID: flags.group,
    REPLAYABLE_TOPICS: flags.topic?.join(","),
  });
  const { config } = setup;
  const { projection: registered } = commandTarget(setup, { uses: ["group"] });
  const waitMs = intFlag("--wait-ms", flags.waitMs, 0, 86_400_000, DEFAULT_WAIT_MS);
  const log = cliLogger(config);
  await checkDatabase(config.databaseUrl, flags.execute === true ? ["prune"] : []);
  await withCommandResources(async (open) => {
    const pool = open.pool(config, 1);
    const group = flags.group ?? process.env.REPLAYABLE_GROUP_ID;
    const target = await resolveVersionTarget(pool, registered, flags.version, group, config.groupId);
    const admin = await open.admin(config, log, {
      groupId: target.groupId,
      groupOperation: "Describe",
      topics: config.topics,
      topicOperations: ["Describe"],
    });
    const result = await prune({
      admin,
      pool,
      projection: target.projection,
      groupId: target.groupId,
      topics: config.topics,
      execute: flags.execute === true,
      waitMs,
      log,
    });
    report(result, flags.execute === true, flags.output, target);
  });
}

function report(
  result: PruneResult,
  execute: boolean,
  output: "table" | "json",
  target: VersionTarget,
): void {
  const refusal = execute ? result.refusal : undefined;
  const refused = refusal !== undefined;
  const version = target.version === undefined ? {} : { version: target.version.number };
  if (output === "json") {
    printJson({
      outcome: result.executed ? "executed" : refused ? "refused" : "dry-run",
      ...version,
      ...result,
    });
  } else {
    const out = (line: string) => process.stdout.write(`${line}\n`);
    const line = versionLine(target);
    if (line !== undefined) out(line);
    out(
      result.executed
        ? `Pruned event ids of projection ${result.projection}:`
        : `${refused ? "Refused (nothing changed)" : "Dry run (nothing changed)"}: event ids of projection ${result.projection} below the log start offset:`,
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
    if (result.executed) out(`Deleted ${t.deleted} of ${t.eventIds} event ids.`);
    else if (!refused && t.prunable === "0")
      out(`0 of ${t.eventIds} event ids are below the log start offset: nothing to delete.`);
    else if (!refused) {
      out(`${t.prunable} of ${t.eventIds} event ids are below the log start offset.`);
      out(
        result.refusal === undefined
          ? "Every record of the projection's topics has been read; add --execute to delete them."
          : `--execute would wait for unread records now (${result.refusal.reason}):\n${result.refusal.message}`,
      );
    }
  }
  if (refusal !== undefined) {
    process.stderr.write(`replayable: prune refused, nothing deleted: ${refusal.message}\n`);
    process.exitCode = 1;
  }
}
