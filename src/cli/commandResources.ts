/**
 * What a one-off CLI command opens (a PostgreSQL pool, an admin client connected after the access
 * check), closed when the command ends, last opened first, whether it succeeded or threw. `status`,
 * `prune`, `rebuild` and `replay` open theirs through it (issue 28).
 */
import type pg from "pg";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import { createPool } from "../db/pool.js";
import type { ClusterAdmin } from "../kafka/admin.js";
import { cliAdmin, type KafkaNeeds } from "./common.js";

/** The resources of one command; {@link withCommandResources} closes them. */
export class CommandResources {
  private readonly closers: (() => Promise<void>)[] = [];

  /** Registers `close` to run when the command ends (before what was registered earlier). */
  onClose(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  /** A pool on `config.databaseUrl` of at most `max` connections. */
  pool(config: Pick<Config, "databaseUrl">, max: number): pg.Pool {
    const pool = createPool({ connectionString: config.databaseUrl, max });
    this.onClose(() => pool.end());
    return pool;
  }

  /**
   * An admin client, connected once the access check of `needs` passed ({@link cliAdmin}).
   * @throws as cliAdmin: a refused login, TLS handshake or ACL (exit 2).
   */
  async admin(config: Config, log: Logger, needs: KafkaNeeds): Promise<ClusterAdmin> {
    const admin = await cliAdmin(config, log, needs);
    this.onClose(() => admin.close());
    return admin;
  }

  /**
   * Closes everything opened, last first; every close is attempted.
   * @throws the first close's error, after all were attempted.
   */
  async close(): Promise<void> {
    let failure: unknown;
    for (const close of this.closers.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure instanceof Error) throw failure;
    if (failure !== undefined) throw new Error("closing a command's resource failed", { cause: failure });
  }
}

/**
 * Runs `command` with a {@link CommandResources} and closes what it opened afterwards. When the
 * command throws, its error is the one thrown (a failure to close is then not reported over it).
 */
export async function withCommandResources<T>(
  command: (resources: CommandResources) => Promise<T>,
): Promise<T> {
  const resources = new CommandResources();
  let result: T;
  try {
    result = await command(resources);
  } catch (error) {
    await resources.close().catch(() => undefined);
    throw error;
  }
  await resources.close();
  return result;
}
