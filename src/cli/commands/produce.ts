/** `replayable produce <stream>`: send a demo stream to a topic (creating it if missing). */
import { Command } from "commander";
import type { Config } from "../../config.js";
import { createKafka } from "../../kafka/client.js";
import { produceRecords, type ProducerRecord } from "../../kafka/producer.js";
import { readGithubEventFile } from "../../projections/github/eventFile.js";
import { githubStream } from "../../projections/github/stream.js";
import { generateLedgerStream } from "../../projections/ledger/generate.js";
import {
  cliAdmin,
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

/** Builds the `produce` command and its streams. */
export function produceCommand(): Command {
  const produce = new Command("produce").description("produce a demo stream to a topic");
  produce.addCommand(produceLedgerCommand());
  produce.addCommand(produceGithubCommand());
  return produce;
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
