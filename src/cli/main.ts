/** The `replayable` command line. */
import { Command, CommanderError } from "commander";
import { checksumCommand } from "./commands/checksum.js";
import { deadLettersCommand } from "./commands/deadLetters.js";
import { initCommand } from "./commands/init.js";
import { migrateCommand } from "./commands/migrate.js";
import { produceCommand } from "./commands/produce.js";
import { pruneCommand } from "./commands/prune.js";
import { rebuildCommand } from "./commands/rebuild.js";
import { replayCommand } from "./commands/replay.js";
import { runCommand } from "./commands/run.js";
import { statusCommand } from "./commands/status.js";
import { dropVersionCommand } from "./commands/dropVersion.js";
import { promoteCommand } from "./commands/promote.js";
import { rollbackCommand } from "./commands/rollback.js";

const program = new Command("replayable")
  .description("Apply Kafka records to PostgreSQL effectively once; replay and rebuild safely.")
  .version("0.1.0")
  // The program's own options (--version, --help) only before the command: `run --version N`,
  // `promote --version N` name a projection version (commander "positional options").
  .enablePositionalOptions()
  .showHelpAfterError()
  .addCommand(initCommand())
  .addCommand(migrateCommand())
  .addCommand(runCommand())
  .addCommand(produceCommand())
  .addCommand(statusCommand())
  .addCommand(checksumCommand())
  .addCommand(replayCommand())
  .addCommand(rebuildCommand())
  .addCommand(promoteCommand())
  .addCommand(rollbackCommand())
  .addCommand(dropVersionCommand())
  .addCommand(pruneCommand())
  .addCommand(deadLettersCommand());

/** 128 + SIGPIPE (13): a shell's exit status for a process the signal ended. */
const SIGPIPE_EXIT_CODE = 141;

/** Commander exits 1 on a usage error; ours is 2 (bad flags, like bad configuration), on every subcommand. */
function usageErrorsExit2(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) usageErrorsExit2(sub);
}
usageErrorsExit2(program);

// The reader of the output went away (`replayable status | head`): stop quietly, instead of an
// unhandled 'error' event, with 141 (128 + SIGPIPE), the status a shell gives a tool SIGPIPE
// ended: the command stopped part-way and must not report success. Logs go to stderr, never here.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(SIGPIPE_EXIT_CODE);
});

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (!(error instanceof CommanderError)) throw error;
  // Commander has printed the message (and the help after it); --help and --version exit 0.
  process.exitCode = error.exitCode === 0 ? 0 : 2;
}
