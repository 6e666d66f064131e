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
  /**
   * Idle time before TCP keepalive probes start on each connection, ms; default 10000. Keepalive is
   * always on: it keeps NATs and load balancers from dropping an idle connection and lets the
   * kernel end a dead idle one. It does not bound a query on a silent connection (unacknowledged
   * data is retransmitted for about 15 minutes first, and Node exposes no TCP_USER_TIMEOUT):
   * {@link PoolOptions.queryTimeoutMs} does.
   */
  keepAliveInitialDelayMs?: number;
  /**
   * Client-side deadline of every query, ms (node-postgres `query_timeout`); absent: none. A query
   * past it fails with "Query read timeout" and its connection is discarded, never reused: a
   * failed `pool.query` is released with its error, and a checked-out client must be released with
   * `release(true)` after any failed query (node-postgres keeps a timed-out query as the active
   * one, and closing such a client destroys its socket).
   */
  queryTimeoutMs?: number;
  /** PostgreSQL `statement_timeout` of every session, ms; absent: the server's setting. */
  statementTimeoutMs?: number;
  /**
   * PostgreSQL `idle_in_transaction_session_timeout` of every session, ms; absent: the server's
   * setting. The server ends a session idle this long inside a transaction, and with it its row
   * locks: the bound on how long a transaction whose client went silent keeps the checkpoint row.
   */
  idleInTransactionTimeoutMs?: number;
}

/** {@link PoolOptions.keepAliveInitialDelayMs}'s default, ms. */
export const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

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
    keepAlive: true,
    keepAliveInitialDelayMillis: options.keepAliveInitialDelayMs ?? KEEPALIVE_INITIAL_DELAY_MS,
    ...(options.queryTimeoutMs === undefined ? {} : { query_timeout: options.queryTimeoutMs }),
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
    ...(options.idleInTransactionTimeoutMs === undefined
      ? {}
      : { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs }),
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

/**
 * True when `error` (or an error in its `cause` chain: drizzle-orm wraps node-postgres errors) is
 * node-postgres's client-side query timeout ("Query read timeout", {@link PoolOptions.queryTimeoutMs}).
 * Its connection still has the unanswered query as its active one: anything sent after it queues
 * behind it, so the connection must be discarded, not rolled back and reused.
 */
export function isQueryReadTimeout(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 10 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof Error && current.message === QUERY_READ_TIMEOUT) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** node-postgres's message of a query past `query_timeout` (pg/lib/client.js). */
const QUERY_READ_TIMEOUT = "Query read timeout";

/** A drizzle handle over a pool or a checked-out client. */
export function drizzleOf(client: pg.Pool | pg.PoolClient): Db {
  return drizzle(client);
}

/** Listener kept on every client of a pool: see {@link createPool}. */
function ignoreCheckedOutClientError(): void {}
