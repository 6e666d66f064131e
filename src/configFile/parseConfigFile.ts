/**
 * Checks what a config file exports: its settings and its projections, every problem at once.
 * Each problem is one line naming the file, the entry and the field, and what would be valid.
 */
import { existsSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { ConfigVariable, FileSettings } from "../config.js";
import type { RegisteredProjection } from "../projections/registry.js";
import type { Projection } from "../projection.js";
import { closest } from "../text/suggest.js";
import { versionedTableProblems } from "../versions/versionNames.js";
import {
  DECLARATION_KINDS,
  projectionFromDeclaration,
  type ProjectionDeclaration,
} from "./projectionFromDeclaration.js";
import type { OauthBearerProvider } from "../kafka/securityConfig.js";
import {
  OAUTH_BEARER_PROVIDER_SETTING,
  SETTING_VARIABLES,
  settingText,
  type SettingName,
} from "./settings.js";

/** A user projection's name: also part of its migrations table's name, which PostgreSQL limits to 63 bytes. */
const PROJECTION_NAME = /^[a-z][a-z0-9_]{0,41}$/;
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;
/** `table` or `schema.table`, unquoted PostgreSQL identifiers. */
const TABLE = /^([a-z_][a-z0-9_$]*\.)?[a-z_][a-z0-9_$]*$/;

const fn = (what: string) =>
  z.custom<(...args: never[]) => unknown>((v) => typeof v === "function", {
    message: `must be a function (${what})`,
  });

const definitionSchema = z.strictObject({
  name: z.string().regex(PROJECTION_NAME, {
    message: "must be lower case letters, digits and _, starting with a letter, at most 42 characters",
  }),
  dedupe: z.union(
    [
      z.strictObject({ kind: z.literal("offset") }),
      z.strictObject({ kind: z.literal("event-id"), header: z.string().min(1) }),
      z.strictObject({ kind: z.literal("event-id"), field: z.string().min(1) }),
    ],
    {
      message:
        'must be { kind: "offset" }, { kind: "event-id", header: "ce_id" } or { kind: "event-id", field: "id" }',
    },
  ),
  topics: z
    .array(z.string().regex(TOPIC, { message: "each topic is 1-249 of a-z A-Z 0-9 . _ -" }))
    .min(1, { message: "must name at least one topic" }),
  tables: z
    .array(
      z.string().regex(TABLE, {
        message: "each table is schema.table in lower case, e.g. orders.order_totals",
      }),
    )
    .min(1, { message: "must name at least one table (rebuild empties them)" }),
  migrations: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
  decode: fn("record) => value"),
  apply: fn("ctx, decoded) => Promise<void>"),
  applyBatch: fn("ctx, decodedRecords) => Promise<void>").optional(),
  versioned: z.boolean({ message: "must be true or false" }).optional(),
  retryAfterLaterRecords: z.boolean({ message: "must be true or false" }).optional(),
});

const DEFINITION_FIELDS = Object.keys(definitionSchema.shape);

/** What a config file holds once checked. */
export interface ParsedConfigFile {
  readonly path: string;
  readonly settings: FileSettings;
  readonly projections: readonly RegisteredProjection[];
  /** One line each, indented by two spaces, as the CLI prints them. */
  readonly problems: readonly string[];
}

/**
 * Checks `exported` (the file's default export): unknown settings and fields (with a suggestion),
 * invalid fields, duplicate projection names, migration folders without `meta/_journal.json`.
 * Setting values themselves are checked with the environment's by `parseConfig` (config.ts).
 */
export function parseConfigFile(path: string, exported: unknown): ParsedConfigFile {
  const label = basename(path);
  const problems: string[] = [];
  const values: Partial<Record<ConfigVariable, string>> = {};
  const names: Partial<Record<ConfigVariable, string>> = {};
  const projections: RegisteredProjection[] = [];
  const settings = { label, values, names };
  if (exported === null || typeof exported !== "object" || Array.isArray(exported)) {
    problems.push(`  ${label}: the default export must be defineConfig({ projections: [...], ... })`);
    return { path, settings, projections, problems };
  }
  const known = [...Object.keys(SETTING_VARIABLES), OAUTH_BEARER_PROVIDER_SETTING, "projections"];
  let oauthBearerProvider: OauthBearerProvider | undefined;
  for (const [key, value] of Object.entries(exported)) {
    if (key === "projections") continue;
    if (key === OAUTH_BEARER_PROVIDER_SETTING) {
      if (typeof value === "function") oauthBearerProvider = value as OauthBearerProvider;
      else problems.push(`  ${label}: ${key}: must be a function returning a Promise of { value: token }`);
      continue;
    }
    if (!(key in SETTING_VARIABLES)) {
      const suggestion = closest(key, known);
      problems.push(
        `  ${label}: ${key}: is not a setting; ${suggestion ? `did you mean ${suggestion}?` : `the settings are listed under "Configuration" in README.md`}`,
      );
      continue;
    }
    const variable = SETTING_VARIABLES[key as SettingName];
    const text = settingText(value);
    if (text === undefined) {
      problems.push(`  ${label}: ${key}: must be a string, a number, a boolean or an array of strings`);
      continue;
    }
    values[variable] = text;
    names[variable] = key;
  }
  const entries = (exported as { projections?: unknown }).projections;
  if (entries !== undefined && !Array.isArray(entries)) {
    problems.push(`  ${label}: projections: must be an array of defineProjection({ ... }) entries`);
  }
  projections.push(...checkedProjections(label, path, Array.isArray(entries) ? entries : [], problems));
  return { path, settings: { ...settings, oauthBearerProvider }, projections, problems };
}

/**
 * The valid projections of the file's `projections` entries, the first of each name; the problems
 * of the others (invalid fields, a name used twice) go to `problems`, one indented line each.
 */
function checkedProjections(
  label: string,
  path: string,
  entries: readonly unknown[],
  problems: string[],
): RegisteredProjection[] {
  const projections: RegisteredProjection[] = [];
  const seen = new Map<string, number>();
  for (const [index, entry] of entries.entries()) {
    const name =
      entry !== null && typeof entry === "object" && typeof (entry as { name?: unknown }).name === "string"
        ? (entry as { name: string }).name
        : undefined;
    const where = `${label}: projections[${index}]${name === undefined ? "" : ` (${name})`}`;
    const first = name === undefined ? undefined : seen.get(name);
    if (name !== undefined) {
      if (first !== undefined)
        problems.push(
          `  ${where}: name "${name}" is already used by projections[${first}]; each projection needs its own name (it keys its checkpoints and event ids)`,
        );
      else seen.set(name, index);
    }
    const result = projectionOf(entry, dirname(path));
    if (result.ok) {
      if (first === undefined) projections.push(result.projection);
    } else for (const problem of result.problems) problems.push(`  ${where}: ${problem}`);
  }
  return projections;
}

function projectionOf(
  entry: unknown,
  configDir: string,
): { ok: true; projection: RegisteredProjection } | { ok: false; problems: readonly string[] } {
  if (entry === null || typeof entry !== "object")
    return { ok: false, problems: ["must be defineProjection({ ... }) or a declaration { kind: ... }"] };
  if ("kind" in entry) {
    const kind = entry.kind;
    if (!DECLARATION_KINDS.includes(kind as (typeof DECLARATION_KINDS)[number]))
      return {
        ok: false,
        problems: [
          `kind: must be one of ${DECLARATION_KINDS.map((k) => `"${k}"`).join(", ")} (a zero-code projection), or leave kind out and use defineProjection({ ... })`,
        ],
      };
    return projectionFromDeclaration(entry as ProjectionDeclaration, { configDir });
  }
  const parsed = definitionSchema.safeParse(entry);
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.flatMap(issueLines) };
  const d = parsed.data;
  let migrationsFolder: string | undefined;
  if (d.migrations !== undefined) {
    const given = d.migrations instanceof URL ? fileURLToPath(d.migrations) : d.migrations;
    migrationsFolder = isAbsolute(given) ? given : resolve(configDir, given);
    if (!existsSync(join(migrationsFolder, "meta", "_journal.json")))
      return {
        ok: false,
        problems: [
          `migrations: ${migrationsFolder} has no meta/_journal.json; write migrations with \`drizzle-kit generate\` (or \`drizzle-kit generate --custom\` for hand-written SQL), or start from \`replayable init\``,
        ],
      };
  }
  if (d.versioned === true) {
    const problems = versionedTableProblems(d.name, d.tables);
    if (problems.length > 0) return { ok: false, problems };
  }
  const definition = entry as Record<string, unknown>;
  const projection: RegisteredProjection = {
    name: d.name,
    dedupe: d.dedupe,
    defaultTopics: d.topics,
    tables: d.tables,
    decode: definition.decode as Projection<unknown>["decode"],
    apply: definition.apply as Projection<unknown>["apply"],
    ...(typeof definition.applyBatch === "function"
      ? { applyBatch: definition.applyBatch as NonNullable<Projection<unknown>["applyBatch"]> }
      : {}),
    migrationsFolder,
    origin: "config",
    ...(d.versioned === true ? { versioned: true } : {}),
    ...(d.retryAfterLaterRecords === undefined ? {} : { retryAfterLaterRecords: d.retryAfterLaterRecords }),
  };
  return { ok: true, projection };
}

/** One zod issue as problem lines: the field's path, what is wrong, and for an unknown field the nearest known one. */
function issueLines(issue: z.core.$ZodIssue): string[] {
  const path = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => {
      const suggestion = closest(key, DEFINITION_FIELDS);
      const field = path === "" ? key : `${path}.${key}`;
      return `${field}: unknown field; ${suggestion ? `did you mean ${suggestion}?` : `the fields are ${DEFINITION_FIELDS.join(", ")}`}`;
    });
  }
  return [`${path === "" ? "(entry)" : path}: ${issue.message}`];
}
