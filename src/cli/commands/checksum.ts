/** `replayable checksum`: fingerprints of a projection's derived tables, to compare before and after a replay. */
import { Command } from "commander";
import { createPool, drizzleOf, type Db } from "../../db/pool.js";
import { checkDatabase } from "../../db/startupCheck.js";
import { ReplayableError } from "../../errors.js";
import { missingTables } from "../../sql/tableExists.js";
import { githubChecksum, readGithubState } from "../../projections/github/checksum.js";
import { ledgerChecksum, readLedgerState } from "../../projections/ledger/checksum.js";
import { tableChecksums } from "../../sql/tableChecksums.js";
import {
  action,
  outputOption,
  configFrom,
  printJson,
  printTable,
  withConnectionOptions,
  type ConnectionFlags,
} from "../common.js";
import { commandTarget } from "../commandTarget.js";

interface ChecksumFlags extends ConnectionFlags {
  projection?: string;
  output: string;
}

/** Per projection, the SHA-256 of its derived tables' state, as `produce <stream>` predicts it. */
const stateChecksums: Readonly<Record<string, (db: Db) => Promise<string>>> = {
  ledger: async (db) => ledgerChecksum(await readLedgerState(db)),
  github: async (db) => githubChecksum(await readGithubState(db)),
};

/** Builds the `checksum` command. */
export function checksumCommand(): Command {
  return withConnectionOptions(new Command("checksum"))
    .description(
      "print row counts and MD5 checksums of the projection's derived tables, and the checksum `produce` predicts for them",
    )
    .option("--projection <name>", "projection (env REPLAYABLE_PROJECTION)")
    .addOption(outputOption())
    .action(action(checksumAction));
}

/** Prints the row counts and MD5 checksums of the projection's tables, and its state checksum. */
async function checksumAction(flags: ChecksumFlags): Promise<void> {
  const setup = await configFrom(flags, { REPLAYABLE_PROJECTION: flags.projection }, { checkTables: true });
  const { config } = setup;
  const { projection } = commandTarget(setup);
  await checkDatabase(config.databaseUrl, [], projection.tables);
  const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
  try {
    const missing = await missingTables(pool, projection.tables);
    if (missing.length > 0)
      throw new ReplayableError(
        "NOT_MIGRATED",
        `projection ${projection.name}'s tables ${missing.join(", ")} do not exist: run \`replayable migrate\` first (with the same database), which applies the projection's migrations`,
        { context: { projection: projection.name, missing } },
      );
    const tables = await tableChecksums(pool, projection.tables);
    const state =
      projection.origin === "example" ? await stateChecksums[projection.name]?.(drizzleOf(pool)) : undefined;
    const ledger = projection.name === "ledger" ? state : undefined;
    if (flags.output === "json")
      printJson({ projection: projection.name, tables, stateChecksum: state, ledgerChecksum: ledger });
    else {
      printTable(tables.map((t) => ({ table: t.table, rows: t.rows, md5: t.md5 })));
      if (state !== undefined) process.stdout.write(`${projection.name} checksum ${state}\n`);
    }
  } finally {
    await pool.end();
  }
}
