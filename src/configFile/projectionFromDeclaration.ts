/**
 * Zero-code projections: an entry of the config file's `projections` that is a declaration
 * (`{ kind: "upsert", ... }`) rather than a {@link ProjectionDefinition} becomes a projection here:
 * the upsert sink of docs/upsert-sink.md (src/projections/upsert/). Its problems are reported with
 * every other problem of the config file; its mapping is checked against the database at start-up.
 */
import type { RegisteredProjection } from "../projections/registry.js";
import { upsertProjection } from "../projections/upsert/upsertProjection.js";
import {
  upsertProjectionSpecSchema,
  upsertSpecProblems,
} from "../projections/upsert/upsertProjectionSpec.js";
import { validateUpsertProjection } from "../projections/upsert/validateUpsertProjection.js";

/** The `kind`s of declarations the config file accepts. */
export const DECLARATION_KINDS = ["upsert"] as const;

/** A zero-code projection declared in the config file; its other fields belong to its kind. */
export interface ProjectionDeclaration {
  readonly kind: (typeof DECLARATION_KINDS)[number];
  readonly name: string;
  readonly [field: string]: unknown;
}

/** The projection a declaration makes, or the problems with it (each one line, without the entry's name). */
export type DeclarationResult =
  | { readonly ok: true; readonly projection: RegisteredProjection }
  | { readonly ok: false; readonly problems: readonly string[] };

/** Where the declaration was read: paths in it are relative to `configDir`. */
export interface DeclarationContext {
  readonly configDir: string;
}

/**
 * Turns a declaration into a projection.
 * @returns `{ ok: false, problems }` for a declaration that cannot be used, never throws.
 */
export function projectionFromDeclaration(
  declaration: ProjectionDeclaration,
  context: DeclarationContext,
): DeclarationResult {
  void context;
  const parsed = upsertProjectionSpecSchema.safeParse(declaration);
  if (!parsed.success)
    return {
      ok: false,
      problems: upsertSpecProblems(declaration).map((p) =>
        p.path === "" ? p.message : `${p.path}: ${p.message}`,
      ),
    };
  const spec = parsed.data;
  return {
    ok: true,
    projection: {
      ...(upsertProjection(spec) as RegisteredProjection),
      origin: "config",
      migrationsFolder: undefined,
      missingTableFix:
        "the sink writes to a table it does not create: create it (CREATE TABLE, or your application's migrations, or a defineProjection with `migrations` in this config file that `replayable migrate` applies), then run again",
      validate: async (pool) =>
        (await validateUpsertProjection(spec, pool)).map(
          (p) => `projection ${spec.name}: ${p.path === "" ? "" : `${p.path}: `}${p.message}`,
        ),
    },
  };
}
