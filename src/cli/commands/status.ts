/** `replayable status`: per partition, the committed offset, the checkpoint, the high watermark and the lag. */
import { Command } from "commander";
import { createPool } from "../../db/pool.js";
import { KafkaAdmin } from "../../kafka/admin.js";
import { offsetDistance } from "../../offsets.js";
import { getProjection } from "../../projections/registry.js";
import { projectionTopics } from "../../replay/projectionTopics.js";
import { readCheckpoints } from "../../sql/readCheckpoints.js";
import {
  action,
  outputOption,
  cliKafka,
  cliLogger,
  configFrom,
  printJson,
  printTable,
  projectionFor,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";

interface StatusFlags extends ConnectionFlags {
  projection?: string;
  topic?: string[];
  group?: string;
  output: string;
}

/** One partition's state as `status` reports it. Offsets are strings; "-" where none. */
export interface PartitionStatus {
  topic: string;
  partition: number;
  logStartOffset: string;
  highWatermark: string;
  committedOffset: string;
  checkpoint: string;
  /** High watermark minus the committed offset (minus the log start offset when nothing is committed). */
  lag: string;
}

/** Builds the `status` command. */
export function statusCommand(): Command {
  return withConnectionOptions(new Command("status"))
    .description("show per partition: log start offset, high watermark, committed offset, checkpoint and lag")
    .option(
      "--projection <name>",
      "projection whose checkpoints to show (env REPLAYABLE_PROJECTION; default: the projection named like --group)",
    )
    .option(
      "--topic <topic...>",
      "topics (default: those the group has committed offsets for or the projection has checkpoints for, else the projection's default topics)",
    )
    .option("--group <id>", "consumer group id (default: the projection name)")
    .addOption(outputOption())
    .action(
      action(async (flags: StatusFlags) => {
        const config = configFrom(flags, {
          REPLAYABLE_PROJECTION:
            flags.projection ?? (flags.group === undefined ? undefined : projectionFor(flags.group)),
          REPLAYABLE_TOPICS: flags.topic?.join(","),
          REPLAYABLE_GROUP_ID: flags.group,
        });
        const projection = getProjection(config.projection);
        const log = cliLogger(config);
        const admin = await KafkaAdmin.connect(cliKafka(config, log));
        const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
        try {
          const topics = await projectionTopics(admin, pool, projection, config.groupId, config.topics);
          const rows: PartitionStatus[] = [];
          const committed = await admin.committedOffsets(config.groupId, topics);
          const checkpoints = await readCheckpoints(pool, projection.name);
          for (const topic of topics) {
            for (const p of await admin.topicOffsets(topic)) {
              const c =
                committed.find((x) => x.topic === topic && x.partition === p.partition)?.offset ?? "-1";
              const cp = checkpoints.find(
                (x) => x.topic === topic && x.partition === p.partition,
              )?.nextOffset;
              const from = c === "-1" ? p.logStartOffset : c;
              rows.push({
                topic,
                partition: p.partition,
                logStartOffset: p.logStartOffset,
                highWatermark: p.highWatermark,
                committedOffset: c === "-1" ? "-" : c,
                checkpoint: cp ?? "-",
                lag: offsetDistance(p.highWatermark, from).toString(),
              });
            }
          }
          if (flags.output === "json")
            printJson({ groupId: config.groupId, projection: projection.name, partitions: rows });
          else {
            process.stdout.write(`group ${config.groupId}, projection ${projection.name}\n`);
            printTable(rows as unknown as Record<string, string | number>[]);
          }
        } finally {
          await admin.close();
          await pool.end();
        }
      }),
    );
}
