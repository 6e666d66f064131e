/**
 * The stack of one blue/green test (docs/design.md "Blue/green versions"): the versioned projection
 * of test/helpers/versionedConfig.ts in a config folder of its own, a database and a topic of its own,
 * the CLI run in that folder, and the steps the versions tests share (create version 2, run its
 * member, wait for a version to catch up, stop a member, read the versions' states).
 */
import { expect, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { produceRecords } from "../../src/kafka/producer.js";
import { runCli, startCliInTest, type CliProcess } from "./process.js";
import {
  createTestDatabase,
  testKafka,
  uniqueName,
  waitFor,
  waitForCaughtUp,
  type TestDatabase,
} from "./stack.js";
import { sales, tempFolder, writeVersionedConfig } from "./versionedConfig.js";

/** What a CLI command run to completion printed, and its exit code. */
export type CliResult = Awaited<ReturnType<typeof runCli>>;

/** A config folder with the versioned projection and a database of its own; nothing in Kafka yet. */
export interface VersionedProject {
  /** The config folder (`replayable.config.ts`, `migrations/`, `migrations-changed/`), removed at the end. */
  readonly dir: string;
  /** The test's database, empty (not migrated), dropped when the test finishes. */
  readonly db: TestDatabase;
  /** The projection's name, `<prefix>_…`; version N is schema `<name>_vN` and group `<name>-vN`. */
  readonly name: string;
  /** The topic the projection reads, `<prefix>-topic_…`. */
  readonly topic: string;
  /** The CLI's environment: DATABASE_URL and the `env` the stack was made with. */
  readonly env: Record<string, string>;
  /** Runs `replayable <args>` in the folder to completion, with {@link env} and `extra`. */
  readonly cli: (args: readonly string[], extra?: Record<string, string>) => Promise<CliResult>;
  /**
   * Starts `replayable <args>` in the folder with {@link env} and `extra`: its stderr printed if the
   * test fails, stopped with SIGTERM when the test finishes (nothing to do if it has exited).
   */
  readonly start: (args: readonly string[], extra?: Record<string, string>) => CliProcess;
  /** {@link start} of `replayable run <args>`: a member, of the live version unless `--version N`. */
  readonly run: (args: readonly string[], extra?: Record<string, string>) => CliProcess;
}

/**
 * {@link versionedProject}'s stack with Kafka and version 1: the topic made and filled, `migrate`
 * run, and the steps on versions that need the admin client.
 */
export interface VersionedStack extends VersionedProject {
  /** The `migrate` that created version 1 (exit code 0, asserted). */
  readonly migrated: CliResult;
  /** Produces `sales(count, from)` of test/helpers/versionedConfig.ts to the topic. */
  readonly produceSales: (count: number, from?: number) => Promise<void>;
  /** Waits until version `version`'s group has committed the end of every partition of the topic. */
  readonly waitForCaughtUp: (version: number, timeoutMs?: number) => Promise<void>;
  /**
   * `rebuild --blue-green --execute --no-run`: creates the next version (2 after `migrate`) without
   * a member, as the code run with `extra` (`BG_VARIANT=changed` for the changed code) defines it.
   * Expects exit code 0.
   */
  readonly createVersion: (extra?: Record<string, string>) => Promise<CliResult>;
  /**
   * Version 2 built beside the live version 1: starts version 1's member, waits until it caught up,
   * creates version 2 ({@link createVersion}), starts its member and waits until it caught up too.
   */
  readonly buildVersion2: () => Promise<{ live: CliProcess; shadow: CliProcess }>;
  /** SIGTERMs `member` of version `version`, expects exit code 0, waits until its group is empty. */
  readonly stop: (member: CliProcess, version: number) => Promise<void>;
  /** `[version, state]` of every version of the projection, by version. */
  readonly states: () => Promise<[number, string][]>;
}

/**
 * A config folder with the versioned projection `<prefix>_…` of the topic `<prefix>-topic_…` and a
 * database of its own (not migrated); the CLI runs in the folder with `env` added to DATABASE_URL.
 * For tests that change the config before `migrate`; most want {@link versionedStack}.
 */
export async function versionedProject(
  prefix: string,
  env: Record<string, string> = {},
): Promise<VersionedProject> {
  const dir = tempFolder();
  const db = await createTestDatabase(false);
  onTestFinished(() => db.drop());
  const name = uniqueName(prefix);
  const topic = uniqueName(`${prefix}-topic`);
  writeVersionedConfig(dir, name, topic);
  const fullEnv = { DATABASE_URL: db.url, ...env };
  return {
    dir,
    db,
    name,
    topic,
    env: fullEnv,
    cli: (args, extra = {}) => runCli(args, { ...fullEnv, ...extra }, { cwd: dir }),
    start: (args, extra = {}) => startCliInTest(args, { ...fullEnv, ...extra }, { cwd: dir }),
    run: (args, extra = {}) => startCliInTest(["run", ...args], { ...fullEnv, ...extra }, { cwd: dir }),
  };
}

/**
 * The stack of one blue/green test: {@link versionedProject}'s folder and database, a 2-partition
 * topic holding `count` sales, and version 1 created by `migrate` (exit code 0 expected). Everything
 * goes when the test finishes: the processes started with `start` and `run`, the database, the folder.
 *
 * @example
 * const bg = await versionedStack(admin, "bg", 40);
 * const live = bg.run([]);
 * await bg.waitForCaughtUp(1);
 * await bg.createVersion();
 * const shadow = bg.run(["--version", "2"]);
 */
export async function versionedStack(
  admin: ClusterAdmin,
  prefix: string,
  count: number,
  env: Record<string, string> = {},
): Promise<VersionedStack> {
  const project = await versionedProject(prefix, env);
  const { db, name, topic, cli, run } = project;
  const produceSales = async (n: number, from = 0) => {
    await produceRecords(testKafka(), topic, sales(n, from));
  };
  await admin.createTopic(topic, 2);
  await produceSales(count);
  const migrated = await cli(["migrate"]);
  expect(migrated.code, migrated.stderr).toBe(0);
  const caughtUp = (version: number, timeoutMs?: number) =>
    waitForCaughtUp(admin, `${name}-v${version}`, topic, timeoutMs);
  const createVersion = async (extra: Record<string, string> = {}) => {
    const created = await cli(
      ["rebuild", "--projection", name, "--group", name, "--blue-green", "--execute", "--no-run"],
      extra,
    );
    expect(created.code, created.stderr).toBe(0);
    return created;
  };
  return {
    ...project,
    migrated,
    produceSales,
    waitForCaughtUp: caughtUp,
    createVersion,
    async buildVersion2() {
      const live = run([]);
      await caughtUp(1);
      await createVersion();
      const shadow = run(["--version", "2"]);
      await caughtUp(2);
      return { live, shadow };
    },
    async stop(member, version) {
      member.signal("SIGTERM");
      expect((await member.exited).code).toBe(0);
      const group = `${name}-v${version}`;
      await waitFor(`group ${group} to have no members`, async () =>
        (await admin.describeGroup(group)).members.length === 0 ? true : undefined,
      );
    },
    async states() {
      const r = await db.pool.query<{ version: number; state: string }>(
        "SELECT version, state FROM replayable.projection_versions WHERE projection = $1 ORDER BY version",
        [name],
      );
      return r.rows.map((row): [number, string] => [row.version, row.state]);
    },
  };
}
