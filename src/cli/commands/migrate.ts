/** `replayable migrate`: apply the drizzle migrations (safe when several processes start at once). */
import { Command } from "commander";
import { redactUrl } from "../../config.js";
import { createPool } from "../../db/pool.js";
import { migrate } from "../../db/migrate.js";
import { action, cliLogger, configFrom, withConnectionOptions, type ConnectionFlags } from "../common.js";

/** Builds the `migrate` command. */
export function migrateCommand(): Command {
  return withConnectionOptions(new Command("migrate"))
    .description("create or upgrade the replayable and projection schemas in PostgreSQL")
    .action(
      action(async (flags: ConnectionFlags) => {
        const config = configFrom(flags);
        const log = cliLogger(config);
        const pool = createPool({ connectionString: config.databaseUrl, max: 1 });
        try {
          await migrate(pool);
          log.info({ database: redactUrl(config.databaseUrl) }, "migrations applied");
          process.stdout.write("migrations applied\n");
        } finally {
          await pool.end();
        }
      }),
    );
}
