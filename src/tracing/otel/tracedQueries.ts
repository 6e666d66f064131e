/**
 * PostgreSQL statements as child spans of a transaction's span (the database client semantic
 * conventions, stable since semconv 1.33: `db.system.name=postgresql`, `db.query.text`,
 * `db.operation.name`, `db.namespace`, `server.address`, `server.port`, `db.response.status_code`).
 *
 * Why not @opentelemetry/instrumentation-pg: it patches `pg` when the module is first required
 * (require-in-the-middle) or, for ES modules, through a loader hook given at process start
 * (`--import`); replayable is ES modules, imports `pg` before it knows whether tracing is on, and
 * loads the SDK only when it is. So the one client checked out for a transaction gets an own
 * `query` for that transaction only, which starts a span around the prototype's `query`; it is
 * removed before the client goes back to the pool. Nothing of `pg` is patched globally, and a
 * tracer provider the library user passes gets the same spans without any instrumentation set up.
 */
import {
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import {
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_TEXT,
  ATTR_DB_RESPONSE_STATUS_CODE,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from "@opentelemetry/semantic-conventions";
import type pg from "pg";
import { errorMessage } from "../../errors.js";

/** The connection fields of a node-postgres client (public fields of pg.Client). */
interface ClientConnection {
  readonly database?: string | undefined;
  readonly host?: string | undefined;
  readonly port?: number | undefined;
}

type Query = (...args: unknown[]) => unknown;

/**
 * Statement spans one transaction makes at most: a projection that sends a statement per record
 * would otherwise make thousands per transaction and fill the SDK's export queue (2048 spans by
 * default), which then drops the spans that end last, the transaction's own among them.
 */
export const MAX_STATEMENT_SPANS = 100;

/**
 * The per-record savepoint statements (docs/design.md "The transaction", step 4): bookkeeping of
 * the engine, two or three per record, never spans (counted as untraced).
 */
const SAVEPOINT_OPERATIONS = new Set(["SAVEPOINT", "RELEASE"]);

/**
 * Makes each promise-returning `client.query(...)` a span (kind CLIENT, child of `parent`) until
 * the returned function is called: the first {@link MAX_STATEMENT_SPANS} statements, savepoints
 * left out. A query with a callback or a submittable (a cursor, a stream) passes through untraced;
 * replayable sends none inside a transaction.
 * @returns the function that restores the client's own `query` and returns how many statements
 *   were not made spans (savepoints and those past the limit).
 */
export function traceQueries(client: pg.PoolClient, tracer: Tracer, parent: Context): () => number {
  let spans = 0;
  let untraced = 0;
  const target = client as unknown as { query: Query };
  const original = target.query;
  const own = Object.getOwnPropertyDescriptor(target, "query");
  const base = connectionAttributes(client);
  target.query = function tracedQuery(this: unknown, ...args: unknown[]): unknown {
    const first = args[0] as string | { text?: unknown; submit?: unknown } | undefined;
    if (
      typeof args[args.length - 1] === "function" ||
      (typeof first === "object" && typeof first?.submit === "function")
    )
      return original.apply(this, args);
    const text = typeof first === "string" ? first : typeof first?.text === "string" ? first.text : undefined;
    const operation = text === undefined ? undefined : operationName(text);
    const savepoint =
      operation !== undefined &&
      (SAVEPOINT_OPERATIONS.has(operation) || (operation === "ROLLBACK" && /\bTO\b/i.test(text ?? "")));
    if (savepoint || spans >= MAX_STATEMENT_SPANS) {
      untraced += 1;
      return original.apply(this, args);
    }
    spans += 1;
    const attributes: Attributes = { ...base };
    if (text !== undefined) attributes[ATTR_DB_QUERY_TEXT] = text;
    if (operation !== undefined) attributes[ATTR_DB_OPERATION_NAME] = operation;
    const span = tracer.startSpan(
      operation ?? DB_SYSTEM_NAME_VALUE_POSTGRESQL,
      { kind: SpanKind.CLIENT, attributes },
      parent,
    );
    const failed = (error: unknown) => endFailed(span, error);
    let result: unknown;
    try {
      result = original.apply(this, args);
    } catch (error) {
      failed(error);
      throw error;
    }
    return (result as Promise<unknown>).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failed(error);
        throw error;
      },
    );
  };
  return () => {
    if (own !== undefined) Object.defineProperty(target, "query", own);
    else delete (target as Partial<typeof target>).query;
    return untraced;
  };
}

/** The attributes of every statement span of `client`: the system, and its database, host and port when known. */
function connectionAttributes(client: pg.PoolClient): Attributes {
  const connection = client as unknown as ClientConnection;
  const base: Attributes = { [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL };
  if (connection.database !== undefined) base[ATTR_DB_NAMESPACE] = connection.database;
  if (connection.host !== undefined) base[ATTR_SERVER_ADDRESS] = connection.host;
  if (connection.port !== undefined) base[ATTR_SERVER_PORT] = connection.port;
  return base;
}

/** Ends `span` as failed by `error`: its SQLSTATE (`db.response.status_code`, `error.type`) when it has one. */
function endFailed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") span.setAttribute(ATTR_DB_RESPONSE_STATUS_CODE, code);
  span.setAttribute(ATTR_ERROR_TYPE, typeof code === "string" ? code : "_OTHER");
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  span.end();
}

/**
 * The statement's first keyword, upper case (`SELECT`, `INSERT`, `SAVEPOINT`, `BEGIN`): the
 * span's name and `db.operation.name`; undefined when the text starts with no word. For several
 * statements in one query (`BEGIN ...; SET LOCAL ...`), the first one's.
 */
export function operationName(text: string): string | undefined {
  const match = /^\s*(?:--[^\n]*\n\s*|\/\*[\s\S]*?\*\/\s*)*([A-Za-z]+)/.exec(text);
  return match?.[1]?.toUpperCase();
}
