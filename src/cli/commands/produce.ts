/**
 * `replayable produce`: send the records of a JSON Lines file to a topic of one's own
 * (`--topic T --file F`, the topic must exist unless `--create-topic N`), or a demo stream to a
 * topic (`produce ledger`, `produce github`: created if missing).
 */
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { Command } from "commander";
import { ReplayableError } from "../../errors.js";
import { missingTopicsError } from "../../kafka/missingTopicsError.js";
import { topicsNotOnCluster } from "../../replay/missingTopics.js";
import { unreadableFileReason } from "../../secrets/unreadableFile.js";
import { parseRecordLines } from "../recordLines.js";
import type { Config } from "../../config.js";
import { createKafka } from "../../kafka/client.js";
import { produceRecords, type ProducerRecord } from "../../kafka/producer.js";
import { readGithubEventFile } from "../../projections/github/eventFile.js";
import { githubStream } from "../../projections/github/stream.js";
import { generateLedgerStream } from "../../projections/ledger/generate.js";
import {
  cliAdmin,
  cliKafka,
  action,
  cliLogger,
  configFrom,
  intFlag,
  printJson,
  rateFlag,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";

interface ProduceLedgerFlags extends ConnectionFlags {
  topic: string;
  count: string;
  duplicateRate?: string;
  seed?: string;
  partitions?: string;
  json?: boolean;
}

interface ProduceGithubFlags extends ConnectionFlags {
  topic: string;
  file: string;
  duplicateRate?: string;
  seed?: string;
  partitions?: string;
  json?: boolean;
}

interface ProduceFileFlags extends ConnectionFlags {
  topic?: string;
  file?: string;
  createTopic?: string;
  json?: boolean;
}

/** Builds the `produce` command: a records file to a topic, or (subcommands) a demo stream. */
export function produceCommand(): Command {
  const produce = withConnectionOptions(new Command("produce"))
    .description(
      'produce the records of a JSON Lines file to an existing topic, one record per line: {"key": ..., "value": ..., "headers": {...}}; or, with `ledger` or `github`, a demo stream',
    )
    // Its own options only before a subcommand: `produce ledger --topic T` is ledger's --topic.
    .enablePositionalOptions()
    .option(
      "--topic <topic>",
      "topic to produce the file's records to (it must exist, unless --create-topic)",
    )
    .option(
      "--file <path>",
      'JSON Lines file, one record per line: {"key": "k" or null, "value": "text", any JSON or null, "headers": {"name": "text"}}',
    )
    .option(
      "--create-topic <partitions>",
      "create the topic when it does not exist, with this many partitions and replication factor 1 (a local single-broker stack; on a cluster create it with its own tools)",
    )
    .option("--json", "print the summary as JSON")
    .action(action(produceFileAction));
  produce.addCommand(produceLedgerCommand());
  produce.addCommand(produceGithubCommand());
  return produce;
}

/**
 * Produces the records of `--file` to `--topic`, in file order.
 * @throws ReplayableError CONFIG_INVALID when a flag is missing, the file cannot be read or holds a
 *   bad line, or the topic does not exist and `--create-topic` was not given.
 */
async function produceFileAction(flags: ProduceFileFlags): Promise<void> {
  if (flags.topic === undefined || flags.file === undefined)
    throw new ReplayableError(
      "CONFIG_INVALID",
      "produce: give --topic T and --file records.jsonl (one record per line), or a demo stream: `produce ledger` or `produce github` (see --help)",
    );
  const { config } = await configFrom(flags);
  const partitions =
    flags.createTopic === undefined ? undefined : intFlag("--create-topic", flags.createTopic, 1, 10_000, 1);
  let content: string;
  try {
    content = await readFile(flags.file, "utf8");
  } catch (error) {
    throw new ReplayableError("CONFIG_INVALID", `--file ${flags.file}: ${unreadableFileReason(error)}`);
  }
  const records = parseRecordLines(content, basename(flags.file));
  const log = cliLogger(config);
  const admin = await cliAdmin(config, log, { topics: [flags.topic], topicOperations: ["Write"] });
  let created = false;
  try {
    if ((await topicsNotOnCluster(admin, [flags.topic])).length > 0) {
      if (partitions === undefined)
        throw missingTopicsError(
          [flags.topic],
          "--topic",
          "create it with your cluster's tools, or give --create-topic <partitions> to create it here with replication factor 1, or correct the name",
        );
      created = await admin.createTopic(flags.topic, partitions);
    }
  } finally {
    await admin.close();
  }
  await produceRecords(cliKafka(config, log), flags.topic, records);
  const summary = { topic: flags.topic, file: flags.file, records: records.length, created };
  if (flags.json) printJson(summary);
  else
    process.stdout.write(
      `${created ? `created topic ${flags.topic} (${partitions} partition${partitions === 1 ? "" : "s"}, replication factor 1)\n` : ""}produced ${records.length} records from ${flags.file} to ${flags.topic}\n`,
    );
}

/** Builds `produce ledger`. */
function produceLedgerCommand(): Command {
  return withConnectionOptions(new Command("ledger"))
    .description(
      "produce ledger CloudEvents (credits, debits, orders paid and shipped); re-sends a fraction with the same ce_id at new offsets, and prints the checksum the final ledger must have",
    )
    .requiredOption("--topic <topic>", "topic to produce to")
    .requiredOption("--count <n>", "records to produce, duplicates included")
    .option("--duplicate-rate <r>", "fraction of records that re-send an earlier event, 0 <= r < 1", "0")
    .option("--seed <s>", "seed of the generator; the same seed makes the same stream", "1")
    .option("--partitions <n>", "partitions when the topic is created", "3")
    .option("--json", "print the summary as JSON")
    .action(action(produceLedgerAction));
}

/** Generates the ledger stream, creates the topic if missing, produces it and prints the summary. */
async function produceLedgerAction(flags: ProduceLedgerFlags): Promise<void> {
  const { config } = await configFrom(flags);
  const count = intFlag("--count", flags.count, 1, 100_000_000, 1);
  const stream = generateLedgerStream({
    count,
    duplicateRate: rateFlag("--duplicate-rate", flags.duplicateRate),
    seed: intFlag("--seed", flags.seed, 0, 2 ** 32 - 1, 1),
  });
  const partitions = intFlag("--partitions", flags.partitions, 1, 10_000, 3);
  await produceToTopic(config, flags.topic, partitions, stream.records);
  const summary = {
    topic: flags.topic,
    records: stream.records.length,
    events: stream.events,
    duplicates: stream.duplicates,
    checksum: stream.checksum,
  };
  if (flags.json) printJson(summary);
  else
    process.stdout.write(
      `produced ${summary.records} records to ${summary.topic}: ${summary.events} events, ${summary.duplicates} re-sent duplicates\nexpected ledger checksum ${summary.checksum}\n`,
    );
}

/** Builds `produce github`. */
function produceGithubCommand(): Command {
  return withConnectionOptions(new Command("github"))
    .description(
      "produce a GH Archive JSON Lines file (one GitHub event per line) as it is: key = repo, value = the line's bytes, in file order; re-sends a fraction of the events (same id) at new offsets, and prints the totals and checksum the github tables must have",
    )
    .requiredOption("--topic <topic>", "topic to produce to")
    .requiredOption(
      "--file <path>",
      "JSON Lines file, e.g. data/github-events/2021-07-21-gharchive-800.jsonl",
    )
    .option("--duplicate-rate <r>", "fraction of the events sent a second time, 0 <= r < 1", "0")
    .option("--seed <s>", "seed choosing which events are re-sent and where", "1")
    .option("--partitions <n>", "partitions when the topic is created", "3")
    .option("--json", "print the summary as JSON")
    .action(action(produceGithubAction));
}

/** Reads the GH Archive file, creates the topic if missing, produces it and prints the expected totals. */
async function produceGithubAction(flags: ProduceGithubFlags): Promise<void> {
  const { config } = await configFrom(flags);
  const duplicateRate = rateFlag("--duplicate-rate", flags.duplicateRate);
  const seed = intFlag("--seed", flags.seed, 0, 2 ** 32 - 1, 1);
  const partitions = intFlag("--partitions", flags.partitions, 1, 10_000, 3);
  const stream = githubStream(await readGithubEventFile(flags.file), { duplicateRate, seed });
  await produceToTopic(config, flags.topic, partitions, stream.records);
  const summary = {
    topic: flags.topic,
    file: flags.file,
    records: stream.records.length,
    events: stream.events,
    duplicates: stream.duplicates,
    expected: stream.totals,
    checksum: stream.checksum,
  };
  if (flags.json) {
    printJson(summary);
    return;
  }
  const t = stream.totals;
  const types = Object.entries(t.eventTypes)
    .sort(([, a], [, b]) => b - a)
    .map(([type, n]) => `${type} ${n}`)
    .join(", ");
  process.stdout.write(
    [
      `produced ${summary.records} records to ${summary.topic}: ${summary.events} events, ${summary.duplicates} re-sent duplicates`,
      `expected github.github_repo_activity: ${t.repoActivityRows} rows, ${t.events} events over ${t.repos} repos (${types})`,
      `expected github.github_actor_pushes: ${t.actors} rows, ${t.pushes} pushes, ${t.commits} commits`,
      `expected github checksum ${summary.checksum}`,
      "",
    ].join("\n"),
  );
}

/** Creates the topic with `partitions` if it is missing (checking Write on it first), then produces the records in order. */
async function produceToTopic(
  config: Config,
  topic: string,
  partitions: number,
  records: readonly ProducerRecord[],
): Promise<void> {
  const log = cliLogger(config);
  const kafka = createKafka({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-produce`,
    log,
    security: config.kafka.security,
  });
  const admin = await cliAdmin(config, log, { topics: [topic], topicOperations: ["Write"] });
  try {
    await admin.createTopic(topic, partitions);
  } finally {
    await admin.close();
  }
  await produceRecords(kafka, topic, records);
}
