/**
 * `replayable migrate`: create or upgrade replayable's own schema and the schemas of the named
 * projections (safe when several processes start at once). See src/db/migrate.ts.
 */
import { basename } from "node:path";
import { Command } from "commander";
import { redactUrl } from "../../config.js";
import { createPool } from "../../db/pool.js";
import { migrate, type MigrateOptions } from "../../db/migrate.js";
import { checkDatabase } from "../../db/startupCheck.js";
import { ReplayableError } from "../../errors.js";
import type { RegisteredProjection } from "../../projections/registry.js";
import { selectVersions } from "../../sql/projectionVersions.js";
import type { Conversion } from "../../versions/convertToVersioned.js";
import { describeApplied } from "../../versions/migrationDrift.js";
import { versionMigrationDrift } from "../../versions/versionMigrations.js";
import {
  action,
  cliLogger,
  configFrom,
  missingTableProblems,
  withConnectionOptions,
  type CliSetup,
  type ConnectionFlags,
} from "../common.js";

interface MigrateFlags extends ConnectionFlags {
  projection?: string[];
  group?: string;
  convertToVersioned?: boolean;
}

/**
 * The projections `migrate` applies the migrations of: those named by --projection; else the
 * config file's projections and the one REPLAYABLE_PROJECTION or the file's `projection` names.
 * @throws ReplayableError CONFIG_INVALID when that name is no projection.
 */
export function projectionsToMigrate(
  setup: CliSetup,
  named: readonly string[] | undefined,
): RegisteredProjection[] {
  if (named !== undefined && named.length > 0)
    return [...new Set(named)].map((n) => setup.projections.get(n, " (from a command-line flag)"));
  const out = [...setup.projections.configured()];
  // REPLAYABLE_PROJECTION or the config file's `projection`: refused when unknown, naming where
  // it came from (CliSetup.projection).
  if (setup.sources.projection !== "default") {
    const named = setup.projection();
    if (!out.some((p) => p.name === named.name)) out.push(named);
  }
  return out;
}

/**
 * Checks the connection and the privileges migrations need, migrates, then checks that every
 * table of `projections` exists: the plain projections' before any versioned projection's version 1
 * is created, so a missing table leaves no new version behind. `options.groupId`: see {@link MigrateOptions}.
 * @throws ReplayableError CONFIG_INVALID (exit 2) for a TLS or credential mismatch, a missing
 *   grant (each GRANT named), or each missing table and its fix.
 */
export async function migrateAndCheck(
  databaseUrl: string,
  projections: readonly RegisteredProjection[],
  configFile: string | undefined,
  options: MigrateOptions = {},
): Promise<void> {
  await checkDatabase(databaseUrl, ["migrate"]);
  const pool = createPool({ connectionString: databaseUrl, max: 1 });
  const label = configFile === undefined ? "projections" : basename(configFile);
  const check = async (
    db: Parameters<typeof missingTableProblems>[0],
    of: readonly RegisteredProjection[],
  ) => {
    const problems = await missingTableProblems(db, of, label);
    if (problems.length > 0)
      throw new ReplayableError("CONFIG_INVALID", `invalid configuration:\n${problems.join("\n")}`);
  };
  try {
    // The plain projections' tables before any version is created (a missing one stops migrate
    // there), then every projection's, the versions' views included.
    await migrate(pool, projections, {
      ...options,
      beforeVersions: (db) =>
        check(
          db,
          projections.filter((p) => p.versioned !== true),
        ),
    });
    await check(pool, projections);
  } finally {
    await pool.end();
  }
}

/** Builds the `migrate` command. */
export function migrateCommand(): Command {
  return withConnectionOptions(new Command("migrate"))
    .description(
      "create or upgrade replayable's schema and the schemas of the config file's projections (or of those named)",
    )
    .option(
      "--projection <name...>",
      "apply only these projections' migrations (default: every projection of the config file, and REPLAYABLE_PROJECTION's)",
    )
    .option(
      "--group <id>",
      "consumer group id of version 1 of a versioned projection made now, as <id>-v1 (default: the projection's name); with --convert-to-versioned, the plain projection's group, which version 1 keeps",
    )
    .option(
      "--convert-to-versioned",
      'make a projection declared versioned: true, whose tables exist from when it was plain, version 1 in place: its tables, dedupe state and consumer group are kept (docs/replay.md "Converting a plain projection")',
    )
    .action(action(migrateAction));
}

/**
 * Applies the pending migrations of replayable and the chosen projections, then checks their
 * tables; a versioned projection whose live version lacks the code's migrations is named with the
 * fix instead of listed as migrated (exit code 0: other projections may have been migrated).
 */
async function migrateAction(flags: MigrateFlags): Promise<void> {
  // A valid config's tables are checked after migrating (migrateAndCheck): a zero-code sink's
  // table may be made by another projection's migration, which checking first would refuse.
  // With other problems nothing is migrated, and the missing tables are listed too.
  const setup = await configFrom(
    flags,
    { REPLAYABLE_GROUP_ID: flags.group },
    { checkTables: "with-other-problems" },
  );
  const { config } = setup;
  const log = cliLogger(config);
  const projections = projectionsToMigrate(setup, flags.projection);
  const converted: Conversion[] = [];
  try {
    await migrateAndCheck(config.databaseUrl, projections, setup.configFile, {
      groupId: flags.group === undefined ? undefined : config.groupId,
      convertToVersioned: flags.convertToVersioned === true,
      onConverted: (c) => converted.push(c),
    });
  } finally {
    // Those converted before a later projection's refusal are converted: said either way.
    reportConversions(converted, log);
  }
  const stale = await liveVersionsBehind(config.databaseUrl, projections);
  const names = projections.map((p) => p.name).filter((n) => !stale.some((s) => s.name === n));
  log.info({ database: redactUrl(config.databaseUrl), projections: names }, "migrations applied");
  process.stdout.write(`migrations applied: replayable${names.length > 0 ? `, ${names.join(", ")}` : ""}\n`);
  for (const { name, line } of stale) {
    log.warn({ projection: name }, line);
    process.stdout.write(`${line}\n`);
  }
}

/**
 * The versioned projections of `projections` whose live version's migrations are not the code's,
 * each with the line telling the operator so: `migrate` never changes an existing version
 * (docs/design.md "Blue/green versions"), so it must not imply it applied them.
 */
async function liveVersionsBehind(
  databaseUrl: string,
  projections: readonly RegisteredProjection[],
): Promise<{ name: string; line: string }[]> {
  const versioned = projections.filter((p) => p.versioned === true);
  if (versioned.length === 0) return [];
  const pool = createPool({ connectionString: databaseUrl, max: 1 });
  try {
    const out: { name: string; line: string }[] = [];
    for (const projection of versioned) {
      const live = (await selectVersions(pool, projection.name)).find((r) => r.state === "live");
      if (live === undefined) continue;
      const drift = await versionMigrationDrift(pool, projection, live.version);
      const n = live.version;
      const parts = [
        ...(drift.missing.length > 0
          ? [`version ${n} lacks migrations ${drift.missing.map((m) => m.tag).join(", ")}`]
          : []),
        ...(drift.unknown.length > 0
          ? [
              `version ${n} has migrations the code does not know: ${drift.unknown.map(describeApplied).join(", ")}`,
            ]
          : []),
      ];
      if (parts.length === 0) continue;
      const fix =
        drift.missing.length > 0
          ? `migrate never changes an existing version: create a new version with rebuild --blue-green (replayable rebuild --projection ${projection.name} --blue-green --execute)`
          : "migrate never changes an existing version: run the code this version was created with";
      out.push({ name: projection.name, line: `projection ${projection.name}: ${parts.join("; ")}; ${fix}` });
    }
    return out;
  } finally {
    await pool.end();
  }
}

/** Prints (and logs) each conversion `migrate --convert-to-versioned` made. */
function reportConversions(converted: readonly Conversion[], log: ReturnType<typeof cliLogger>): void {
  for (const c of converted) {
    log.info(
      { projection: c.projection, schema: c.schema, groupId: c.groupId, moved: c.moved },
      "converted to versioned",
    );
    const moved = Object.entries(c.moved)
      .map(([t, n]) => `${t} ${n}`)
      .join(", ");
    process.stdout.write(
      `converted ${c.projection} to versioned in place: version 1 (schema ${c.schema}) is live with consumer group ${c.groupId}; views ${c.views.map((v) => `${c.projection}.${v}`).join(", ")}; engine rows re-keyed to ${c.projection}@v1: ${moved}\n`,
    );
  }
}
