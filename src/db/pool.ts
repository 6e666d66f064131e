/** The PostgreSQL connection pool (node-postgres) and the drizzle handle over it. */
import pg from "pg";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { postgresTls } from "./postgresTls.js";

/** A drizzle database over a pool or over one client inside a transaction. */
export type Db = NodePgDatabase<Record<string, never>>;

/** Options for {@link createPool}. */
export interface PoolOptions {
  /** postgres:// URL; its TLS parameters (`sslmode`, `sslrootcert`, ...) as libpq reads them (see postgresTls.ts). */
  connectionString: string;
  /** Largest number of connections; default 10. */
  max?: number;
  /** How long to wait for a free connection or a new one, in ms; default 10000. */
  connectionTimeoutMs?: number;
  /** application_name shown in pg_stat_activity; default "replayable". */
  applicationName?: string;
}

// int8 (bigint, OID 20) as string, never as a lossy number; offsets and sums are 64-bit.
pg.types.setTypeParser(20, (value: string) => value);

/**
 * Creates a node-postgres pool. Errors of idle clients (a restarted server) are
 * passed to `onError` instead of crashing the process; the pool replaces the client. A checked-out
 * client's error never crashes the process either: its next query fails.
 * pg-pool sets `error.client` (the whole pg Client, with its prepared statements) on such an
 * error: it is made non-enumerable first, so a logger's error serializer, which copies the
 * enumerable fields, prints the error and not the client (any pino logger, not only ours).
 * The URL's TLS parameters are read here, with libpq's meaning ({@link postgresTls}), and files it
 * names (sslrootcert, sslcert, sslkey) are read now.
 * @throws ReplayableError CONFIG_INVALID naming DATABASE_URL's TLS parameter at fault.
 */
export function createPool(options: PoolOptions, onError: (error: Error) => void = () => undefined): pg.Pool {
  const pool = new pg.Pool({
    ...connectionConfig(options.connectionString),
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
    application_name: options.applicationName ?? "replayable",
  });
  // A connection can die while checked out and idle before its caller attaches an "error"
  // listener: a new connection's ReadyForQuery and the server's FATAL (pg_terminate_backend, a
  // restart) may come in one socket read, and pg-pool hands the client over (removing its idle
  // listener) between the two messages. An "error" without a listener would crash the process; the
  // error still reaches the caller, as the client is then not queryable and its next query fails.
  pool.on("connect", (client) => client.on("error", ignoreCheckedOutClientError));
  pool.on("error", (error) => {
    if (Object.prototype.propertyIsEnumerable.call(error, "client"))
      Object.defineProperty(error, "client", { enumerable: false });
    onError(error);
  });
  return pool;
}

/**
 * node-postgres's connection options of a postgres:// URL, its TLS parameters read with libpq's
 * meaning ({@link postgresTls}); for a single `pg.Client` (bench and demo administration).
 * @throws ReplayableError CONFIG_INVALID naming DATABASE_URL's TLS parameter at fault.
 */
export function connectionConfig(url: string): pg.ClientConfig {
  const tls = postgresTls(url);
  return {
    connectionString: tls.connectionString,
    ssl: tls.ssl,
    ...(tls.sslnegotiation === undefined ? {} : { sslnegotiation: tls.sslnegotiation }),
  };
}

/** A drizzle handle over a pool or a checked-out client. */
export function drizzleOf(client: pg.Pool | pg.PoolClient): Db {
  return drizzle(client);
}

/** Listener kept on every client of a pool: see {@link createPool}. */
function ignoreCheckedOutClientError(): void {}
