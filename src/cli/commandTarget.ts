/**
 * What a command acts on when the operator names less than all of it: the projection (the config
 * file's only one, or its `projection` setting), its consumer group (the projection's name) and its
 * topics (the projection's `topics`), as `run` consumes them. One rule for `run` and every operator
 * command, and one stderr line saying which defaults a command took.
 */
import { basename } from "node:path";
import type { Config } from "../config.js";
import type { Projection } from "../projection.js";
import type { RegisteredProjection } from "../projections/registry.js";
import { terminalSafe } from "../text/terminalText.js";
import type { CliSetup, SettingSource } from "./common.js";

/** The projection, group and topics a command acts on. */
export interface CommandTarget {
  readonly projection: RegisteredProjection;
  /** `--group` or REPLAYABLE_GROUP_ID, else the config file's `groupId`, else the projection's name. */
  readonly groupId: string;
  /** `--topic` or REPLAYABLE_TOPICS, else the config file's `topics`, else the projection's `topics`. */
  readonly topics: readonly string[];
}

/** What {@link commandTarget} resolves and which of it the command's line mentions. */
export interface TargetOptions {
  /** The `--group` of `status` and `replay`, which also choose the projection named like it. */
  readonly group?: string | undefined;
  /**
   * The parts the command uses as resolved here, for the line on stderr (`projection` is always
   * among them): `topics` only where the command acts on the projection's topics as they are.
   */
  readonly uses?: readonly ("group" | "topics")[];
  /** Print the line (default true); `run` logs its target in its "starting" log line instead. */
  readonly print?: boolean;
}

/**
 * The {@link CommandTarget} of `setup`'s command, and, when the config file supplied any part the
 * operator did not name, one line on stderr saying which it used (see {@link defaultsLine}).
 * @throws ReplayableError CONFIG_INVALID as {@link CliSetup.projection}.
 */
export function commandTarget(setup: CliSetup, options: TargetOptions = {}): CommandTarget {
  const projection = setup.projection(options.group);
  const { config } = setup;
  const target = {
    projection,
    groupId: config.groupId,
    topics: targetTopics(config, projection),
  };
  const byGroup = options.group !== undefined && projection.name === options.group;
  const sources = { ...setup.sources, ...(byGroup ? { projection: "named" as const } : {}) };
  const line = defaultsLine(target, sources, setup.configFile, options.uses ?? []);
  if (line !== undefined && options.print !== false) process.stderr.write(`${line}\n`);
  // Without a config file the example projection is taken: said even by `run`, whose log line
  // would not make it plain that the folder has no config file.
  const example = exampleLine(target, sources, setup.configFile);
  if (example !== undefined) process.stderr.write(`${example}\n`);
  return target;
}

/**
 * The topics a projection is consumed from: `config.topics` (`--topic`, REPLAYABLE_TOPICS or the
 * config file's `topics`) when set, else the projection's own (as the consumer service does).
 */
export function targetTopics(
  config: Pick<Config, "topics">,
  projection: Pick<Projection<unknown>, "defaultTopics">,
): readonly string[] {
  return config.topics.length > 0 ? config.topics : projection.defaultTopics;
}

/**
 * The line a command prints on stderr when there is no config file and the operator named no
 * projection, so the command acts on the example projection REPLAYABLE_PROJECTION defaults to:
 * most often a command started in the wrong folder. Undefined otherwise.
 */
export function exampleLine(
  target: CommandTarget,
  sources: Readonly<Record<"projection", SettingSource>>,
  configFile: string | undefined,
): string | undefined {
  if (configFile !== undefined || sources.projection === "named") return undefined;
  return terminalSafe(
    `replayable: no replayable.config.ts in ${process.cwd()} (and no REPLAYABLE_CONFIG or --config): using the example projection ${target.projection.name}; run the command where your config file is, \`replayable init\` to write one, or name a projection with --projection`,
  );
}

/**
 * The line a command prints on stderr when it took parts of its target from a config file
 * (`configFile`) rather than from flags or variables, e.g. `replayable: using projection sales,
 * group sales, topics orders (replayable.config.ts: its only projection, the projection's name as
 * group, its topics); name others with --projection, --group, --topic`. Undefined when there is
 * no config file or the operator named every part the command uses.
 */
export function defaultsLine(
  target: CommandTarget,
  sources: Readonly<Record<"projection" | "group" | "topics", SettingSource>>,
  configFile: string | undefined,
  uses: readonly ("group" | "topics")[],
): string | undefined {
  if (configFile === undefined) return undefined;
  const parts: { flag: string; text: string; why: string }[] = [];
  if (sources.projection !== "named")
    parts.push({ flag: "--projection", text: `projection ${target.projection.name}`, why: "the projection" });
  if (uses.includes("group") && sources.group !== "named")
    parts.push({
      flag: "--group",
      text: `group ${target.groupId}`,
      why: sources.group === "file" ? "its groupId" : "the projection's name as group",
    });
  if (uses.includes("topics") && sources.topics !== "named")
    parts.push({
      flag: "--topic",
      text: `topics ${target.topics.join(", ")}`,
      why: sources.topics === "file" ? "its topics setting" : "the projection's topics",
    });
  if (parts.length === 0) return undefined;
  return terminalSafe(
    `replayable: using ${parts.map((p) => p.text).join(", ")} (from ${basename(configFile)}: ${parts.map((p) => p.why).join(", ")}); name others with ${parts.map((p) => p.flag).join(", ")}`,
  );
}
