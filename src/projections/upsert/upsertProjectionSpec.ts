/**
 * The declaration of a zero-code upsert sink, as a user writes it in a config file: records of some
 * topics become rows of one table, like Kafka Connect's JDBC sink and Debezium's JDBC sink
 * (`insert.mode`, `pk.mode` record_key / record_value / header, `delete.enabled`). Parsed once at
 * start-up; every problem is reported together with its path and the fix.
 */
import { z } from "zod";
import { ReplayableError } from "../../errors.js";
import type { DedupeKey } from "../../projection.js";
import { FIELD_TYPES, KEY_TYPES } from "./fieldTypes.js";

// The same rules as REPLAYABLE_PROJECTION and REPLAYABLE_TOPICS (src/config.ts).
const NAME = /^[a-z][a-z0-9_]{0,62}$/;
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;
// PostgreSQL truncates identifiers to NAMEDATALEN - 1 = 63 bytes ("Identifiers and Key Words").
const MAX_IDENTIFIER_BYTES = 63;

const identifierProblem = (value: string): string | undefined => {
  if (value.length === 0) return "must not be empty";
  if (value.includes("\u0000")) return "must not hold a NUL character";
  if (Buffer.byteLength(value) > MAX_IDENTIFIER_BYTES)
    return `is over ${MAX_IDENTIFIER_BYTES} bytes, PostgreSQL's longest identifier; use a shorter name`;
  return undefined;
};

/** A PostgreSQL identifier, used exactly as written (quoted): `Users` and `users` are two tables. */
const identifier = (what: string) =>
  z.string({ error: `must be a string: ${what}` }).superRefine((value, ctx) => {
    const problem = identifierProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

/** A strict object: an unknown field is a problem that lists the valid ones. */
function strict<T extends z.core.$ZodLooseShape>(shape: T, what: string) {
  const fields = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === "unrecognized_keys") {
        const keys = issue.keys.map((k) => JSON.stringify(k)).join(", ");
        return `unknown field${issue.keys.length > 1 ? "s" : ""} ${keys}; ${what} has only: ${fields}`;
      }
      if (issue.code === "invalid_type") return `must be an object: ${what}`;
      return undefined;
    },
  });
}

const fieldType = z.enum(FIELD_TYPES, {
  error: (issue) =>
    `${issue.input === undefined ? "is required" : `${JSON.stringify(issue.input)} is not a declarable type`}; use one of ${FIELD_TYPES.join(", ")}`,
});

const KEY_SOURCES = ["record-key", "field", "header"] as const;

const keyPartSchema = strict(
  {
    from: z.enum(KEY_SOURCES, {
      error: `must be one of ${KEY_SOURCES.join(", ")}: the record key, a top-level field of the JSON value, or a header`,
    }),
    name: z
      .string({
        error: "must be a string: the value field or header to read (or a field of a JSON record key)",
      })
      .min(1, "must not be empty")
      .optional(),
    column: identifier("the key column of the table"),
    type: z
      .enum(KEY_TYPES, {
        error: (issue) =>
          `${JSON.stringify(issue.input)} is not a key type; use one of ${KEY_TYPES.join(", ")} (types whose equal values have one spelling)`,
      })
      .default("text"),
  },
  "a key part { from, name?, column, type? }",
);

const columnSchema = strict(
  {
    field: z
      .string({ error: "must be a string: the top-level JSON field to read; default the column's name" })
      .min(1, "must not be empty")
      .optional(),
    type: fieldType,
    required: z.boolean({ error: "must be true or false" }).default(false),
  },
  "a column mapping { field?, type, required? }",
);

const dedupeSchema = strict(
  {
    kind: z.enum(["offset", "event-id"], { error: 'must be "offset" or "event-id"' }),
    header: z.string({ error: "must be a string: the header holding the event id" }).min(1).optional(),
    field: z
      .string({ error: "must be a string: the top-level JSON field holding the event id" })
      .min(1)
      .optional(),
  },
  'the dedupe key { kind: "offset" } or { kind: "event-id", header | field }',
);

/**
 * The zod schema of a declaration (`kind: "upsert"`). Output: key parts always as an array, the
 * dedupe key as a {@link DedupeKey}. Defaults: `mode` "upsert", `dedupe` offset, a key part's
 * `type` text, `columns.*.field` the column's name, `required` and `deleteOnTombstone` false.
 * @example
 * upsertProjectionSpecSchema.parse({
 *   kind: "upsert", name: "customers", topics: ["customers"], table: "crm.customers",
 *   key: { from: "record-key", column: "id" },
 *   columns: { email: { type: "text" }, signed_up: { field: "signedUpAt", type: "timestamptz" } },
 *   deleteOnTombstone: true,
 * });
 */
export const upsertProjectionSpecSchema = strict(
  {
    kind: z.literal("upsert", { error: 'must be "upsert" for a zero-code sink' }),
    name: z
      .string({ error: "is required: the projection's name, which keys its checkpoints" })
      .regex(NAME, "must be lower case letters, digits and _, starting with a letter (at most 63)"),
    topics: z
      .array(z.string().regex(TOPIC, "must be a Kafka topic name: letters, digits, . _ - (at most 249)"), {
        error: 'is required: the topics to consume, e.g. ["customers"]',
      })
      .min(1, "must name at least one topic"),
    dedupe: dedupeSchema.default({ kind: "offset" }),
    table: z
      .string({ error: 'is required: the target table as "schema.table", e.g. "public.customers"' })
      .superRefine((value, ctx) => {
        const parts = value.split(".");
        if (parts.length !== 2) {
          ctx.addIssue({
            code: "custom",
            message: `${JSON.stringify(value)} must be "schema.table" with one dot, e.g. "public.customers"`,
          });
          return;
        }
        for (const part of parts) {
          const problem = identifierProblem(part);
          if (problem !== undefined)
            ctx.addIssue({ code: "custom", message: `${JSON.stringify(part)} ${problem}` });
        }
      }),
    mode: z
      .enum(["insert", "upsert"], {
        error:
          'must be "insert" (a second record of a key is dead-lettered) or "upsert" (INSERT … ON CONFLICT DO UPDATE)',
      })
      .default("upsert"),
    key: z
      .preprocess((v) => (v === undefined || Array.isArray(v) ? v : [v]), z.array(keyPartSchema))
      .optional(),
    columns: z.record(identifier("a column of the table"), columnSchema, {
      error: 'must be an object of column: { field?, type }, e.g. { email: { type: "text" } }',
    }),
    deleteOnTombstone: z.boolean({ error: "must be true or false" }).default(false),
  },
  "an upsert projection",
)
  .superRefine((spec, ctx) => {
    for (const problem of crossProblems(spec)) ctx.addIssue({ code: "custom", ...problem });
  })
  .transform((spec) => ({
    ...spec,
    key: spec.key ?? [],
    dedupe: toDedupeKey(spec.dedupe),
  }));

/** A declaration as written in a config file (defaults still to apply). */
export type UpsertProjectionDeclaration = z.input<typeof upsertProjectionSpecSchema>;
/** A parsed declaration: defaults applied, `key` an array (empty when there is none). */
export type UpsertProjectionSpec = z.output<typeof upsertProjectionSpecSchema>;
/** One part of the key: where its value comes from and which column it fills. */
export type UpsertKeyPart = UpsertProjectionSpec["key"][number];

/** A problem of a declaration: where (e.g. `columns.amount.type`) and what to do. */
export interface SpecProblem {
  readonly path: string;
  readonly message: string;
}

/**
 * Every problem of `input` as a declaration, shape and cross-field checks together, in order.
 * Empty when {@link upsertProjectionSpecSchema} accepts it.
 */
export function upsertSpecProblems(input: unknown): SpecProblem[] {
  const result = upsertProjectionSpecSchema.safeParse(input);
  if (result.success) return [];
  const keyIsArray = Array.isArray((input as { key?: unknown } | null)?.key);
  const problems = result.error.issues.map((issue) => ({
    path: formatPath(issue.path, keyIsArray),
    message: issue.message,
  }));
  // The cross-field checks run inside the schema only when the shape is valid: run them here too.
  for (const cross of crossProblems(input)) {
    const problem = { path: formatPath(cross.path, keyIsArray), message: cross.message };
    if (!problems.some((p) => p.path === problem.path && p.message === problem.message))
      problems.push(problem);
  }
  return problems;
}

/**
 * Parses a declaration.
 * @param where how the message names the declaration, e.g. `projections[2]`.
 * @throws ReplayableError CONFIG_INVALID listing every problem as `<where>.<path>: <message>`.
 */
export function parseUpsertProjectionSpec(input: unknown, where = "projection"): UpsertProjectionSpec {
  const result = upsertProjectionSpecSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = upsertSpecProblems(input);
  const lines = problems.map((p) => `  ${where}${p.path === "" ? "" : `.${p.path}`}: ${p.message}`);
  throw new ReplayableError("CONFIG_INVALID", `invalid upsert projection:\n${lines.join("\n")}`, {
    context: { paths: problems.map((p) => p.path) },
  });
}

function toDedupeKey(dedupe: { kind: "offset" | "event-id"; header?: string; field?: string }): DedupeKey {
  if (dedupe.kind === "offset") return { kind: "offset" };
  if (dedupe.header !== undefined) return { kind: "event-id", header: dedupe.header };
  return { kind: "event-id", field: dedupe.field ?? "" };
}

/** `columns.email.type`, `key[1].column`, `columns["a.b"]`; `key[0]` shown as `key` when key was one object. */
function formatPath(path: readonly PropertyKey[], keyIsArray: boolean): string {
  let out = "";
  path.forEach((part, i) => {
    if (typeof part === "number") {
      if (!(i === 1 && path[0] === "key" && !keyIsArray)) out += `[${part}]`;
    } else {
      const name = String(part);
      out += /^[A-Za-z_$][\w$]*$/.test(name)
        ? `${out === "" ? "" : "."}${name}`
        : `[${JSON.stringify(name)}]`;
    }
  });
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Checks across fields, on whatever part of `input` is well-formed (so they are reported together
 * with shape problems). Paths as zod's: key parts always indexed.
 */
function crossProblems(input: unknown): Problem[] {
  if (!isObject(input)) return [];
  const problems: Problem[] = [];
  const add = (path: PropertyKey[] | string, message: string) =>
    problems.push({ path: typeof path === "string" ? [path] : path, message });
  const rawKey = input.key;
  const parts = (rawKey === undefined ? [] : Array.isArray(rawKey) ? rawKey : [rawKey]).filter(isObject);
  const mode = input.mode ?? "upsert";

  const keyColumns = keyPartProblems(rawKey, parts, add);
  if (isObject(input.columns)) {
    for (const column of Object.keys(input.columns)) {
      if (keyColumns.includes(column))
        add(["columns", column], "is a key column, which the key fills; remove it from columns");
    }
    if (Object.keys(input.columns).length === 0 && parts.length === 0)
      add("columns", 'must map at least one column, e.g. { email: { type: "text" } }');
  }
  if (mode === "upsert" && parts.length === 0 && !Array.isArray(rawKey))
    add(
      "key",
      'is required in upsert mode: the column(s) of the primary key or unique constraint that ON CONFLICT matches, e.g. { from: "record-key", column: "id" }',
    );
  if (input.deleteOnTombstone === true) tombstoneProblems(input, parts, add);
  if (isObject(input.dedupe)) {
    const { kind, header, field } = input.dedupe;
    if (kind === "event-id" && (header === undefined) === (field === undefined))
      add("dedupe", 'event-id needs exactly one of header (e.g. "ce_id") or field (e.g. "id")');
    if (kind === "offset" && (header !== undefined || field !== undefined))
      add("dedupe", 'the offset key takes no header or field; use kind: "event-id" to dedupe by an id');
  }
  return problems;
}

/** A cross-field problem: its path as zod gives it, and the message. */
type Problem = { path: PropertyKey[]; message: string };

/** Records a problem at `path` (a top-level field's name, or a full path). */
type AddProblem = (path: PropertyKey[] | string, message: string) => void;

/**
 * Problems of the key parts among themselves: an empty key list, a missing name, a whole record
 * key mixed with named fields of it, a column named twice.
 * @returns the key columns named, for the checks of `columns`.
 */
function keyPartProblems(rawKey: unknown, parts: Record<string, unknown>[], add: AddProblem): string[] {
  if (Array.isArray(rawKey) && rawKey.length === 0)
    add("key", "must name at least one key part, or be left out in insert mode");
  parts.forEach((part, i) => {
    if ((part.from === "field" || part.from === "header") && part.name === undefined)
      add(
        ["key", i, "name"],
        `is required when from is "${part.from}": the ${part.from === "field" ? "top-level JSON field" : "header"} holding the key`,
      );
  });
  const wholeKey = parts.filter((p) => p.from === "record-key" && p.name === undefined).length;
  const namedKey = parts.filter((p) => p.from === "record-key" && p.name !== undefined).length;
  if (wholeKey > 1 || (wholeKey === 1 && namedKey > 0))
    add(
      "key",
      "the record key is either one value (a part without name) or a JSON object whose fields the parts name, not both; give each record-key part a name, or use one part without",
    );
  const keyColumns = parts.map((p) => p.column).filter((c): c is string => typeof c === "string");
  for (const column of new Set(keyColumns.filter((c, i) => keyColumns.indexOf(c) !== i)))
    add(
      "key",
      `column ${JSON.stringify(column)} is named by two key parts; each key part fills its own column`,
    );
  return keyColumns;
}

/** Problems with deleteOnTombstone: a tombstone has no value, so its key and event id cannot come from one. */
function tombstoneProblems(
  input: Record<string, unknown>,
  parts: Record<string, unknown>[],
  add: AddProblem,
): void {
  if (parts.length === 0 && !Array.isArray(input.key))
    add("key", "is required with deleteOnTombstone: a tombstone deletes the row of its key");
  parts.forEach((part, i) => {
    if (part.from === "field")
      add(
        ["key", i, "from"],
        'a tombstone has no value, so with deleteOnTombstone its key cannot come from a value field; use "record-key" or "header", or set deleteOnTombstone: false',
      );
  });
  if (isObject(input.dedupe) && input.dedupe.kind === "event-id" && input.dedupe.field !== undefined)
    add(
      ["dedupe", "field"],
      'a tombstone has no value, so no event-id field: with deleteOnTombstone use { kind: "offset" } or an event-id header',
    );
}
